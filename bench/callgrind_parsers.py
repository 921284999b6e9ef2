"""What the parse alone costs a framed tape line: orjson against msgspec, instructions per line under callgrind.

Run it as a script (valgrind must be installed; msgspec is optional, not a dependency)::

    .venv/bin/python bench/callgrind_parsers.py      # about 3 minutes

It builds the clean 1.8 KB tape of ``callgrind_load.py`` (1,050 lines) and counts, per line, the
instructions of each way to parse the part of a line that ``TapeReader._framed`` parses (the
``spans`` list after the resource and scope frame): ``orjson.loads`` alone, ``orjson.loads`` with
the ``orjson.dumps`` round-trip check the loader makes, and, when msgspec is installed, a typed
``msgspec.json`` decode into ``Struct``s of the OTLP span (every field declared, unknown fields
forbidden) alone and with its own encode round-trip check. ``TapeReader.batches`` (the reader,
no runs or steps) and ``load_tape`` are counted beside them. (3 passes - 1 pass) / 2 / lines, as
``callgrind_load.py``.
"""

import gc
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from callgrind_load import build

from otel_agent_replay import load_tape
from otel_agent_replay.tape._read import TapeReader

_COLLECTED = re.compile(rb"Collected : (\d+)")
_FRAME_END = b"}]}]}\n"
MODES = ("orjson.loads", "orjson.loads+dumps", "msgspec", "msgspec+encode", "TapeReader", "load_tape")


def _msgspec_codec() -> tuple[Any, Any]:
    """A typed decoder of a ``spans`` list (the fields the tape exporter writes, in its order) and an encoder."""
    import msgspec
    from msgspec import UNSET, Struct, UnsetType

    class AnyValue(Struct, omit_defaults=True, forbid_unknown_fields=True):
        stringValue: str | UnsetType = UNSET
        boolValue: bool | UnsetType = UNSET
        intValue: int | str | UnsetType = UNSET
        doubleValue: float | str | UnsetType = UNSET
        bytesValue: str | UnsetType = UNSET

    class KeyValue(Struct, forbid_unknown_fields=True):
        key: str
        value: AnyValue

    class Status(Struct, omit_defaults=True, forbid_unknown_fields=True):
        message: str | UnsetType = UNSET
        code: int | UnsetType = UNSET

    class Span(Struct, omit_defaults=True, forbid_unknown_fields=True):
        traceId: str
        spanId: str
        traceState: str | UnsetType = UNSET
        parentSpanId: str | UnsetType = UNSET
        flags: int | UnsetType = UNSET
        name: str | UnsetType = UNSET
        kind: int | UnsetType = UNSET
        startTimeUnixNano: str | UnsetType = UNSET
        endTimeUnixNano: str | UnsetType = UNSET
        attributes: list[KeyValue] | UnsetType = UNSET
        status: Status | UnsetType = UNSET

    return msgspec.json.Decoder(list[Span]), msgspec.json.Encoder()


def passes(mode: str, path: str, n: int) -> None:
    """What runs under callgrind: a warm-up pass, then ``n`` passes of ``mode``."""
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    start = lines[1].index(b'"spans":') + len(b'"spans":')
    texts = [line[start : -len(_FRAME_END)] for line in lines]
    decode, encode = _msgspec_codec() if mode.startswith("msgspec") else (None, None)
    for _ in range(n + 1):
        if mode == "load_tape":
            load_tape(path)
            continue
        gc.disable()
        if mode == "TapeReader":
            for _batch in TapeReader(path).batches():
                pass
        elif mode == "orjson.loads":
            for text in texts:
                orjson.loads(text)
        elif mode == "orjson.loads+dumps":
            for text in texts:
                assert orjson.dumps(orjson.loads(text)) == text
        elif mode == "msgspec":
            for text in texts:
                decode.decode(text)  # type: ignore[union-attr]
        elif mode == "msgspec+encode":
            for text in texts:
                assert encode.encode(decode.decode(text)) == text  # type: ignore[union-attr]
        gc.enable()


def instructions(mode: str, path: Path, n: int) -> int:
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            mode,
            str(path),
            str(n),
        ],
        capture_output=True,
        check=True,
    )
    found = _COLLECTED.search(proc.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no instruction count:\n{proc.stderr.decode(errors='replace')[-2000:]}")
    return int(found.group(1))


def main() -> None:
    try:
        import msgspec  # noqa: F401
    except ImportError:
        modes = tuple(m for m in MODES if not m.startswith("msgspec"))
        print("(msgspec not installed: its rows are left out)")
    else:
        modes = MODES
    with tempfile.TemporaryDirectory(prefix="callgrind-parsers-") as work:
        path = Path(work) / "clean.jsonl"
        lines = build(path, varied=False)
        print(f"instructions per line, clean tape ({path.stat().st_size / lines / 1000:.2f} KB/line)")
        for mode in modes:
            one, three = instructions(mode, path, 1), instructions(mode, path, 3)
            print(f"{mode:<20} {(three - one) / 2 / lines:>10,.0f}")


if __name__ == "__main__":
    if len(sys.argv) == 4:
        passes(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main()
