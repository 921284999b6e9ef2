"""What the parse alone costs a framed tape line: orjson against msgspec, instructions per line under callgrind.

Run it as a script (valgrind must be installed; msgspec is optional, not a dependency)::

    .venv/bin/python bench/callgrind_parsers.py                  # about 5 minutes
    .venv/bin/python bench/callgrind_parsers.py --only simdjson  # some of the rows

It builds the clean 1.8 KB tape of ``callgrind_load.py`` (1,050 lines) and counts, per line, the
instructions of each way to parse the part of a line that ``TapeReader._framed`` parses (the
``spans`` list after the resource and scope frame): ``orjson.loads`` alone, ``orjson.loads`` with
the ``orjson.dumps`` round-trip check the loader makes, and, when msgspec is installed, a typed
``msgspec.json`` decode into ``Struct``s of the OTLP span (every field declared, unknown fields
forbidden) alone and with its own encode round-trip check. ``TapeReader.batches`` (the reader,
no runs or steps) and ``load_tape`` are counted beside them. (3 passes - 1 pass) / 2 / lines, as
``callgrind_load.py``.

Native strict validators (branch load-34b2; optional too, rows left out when not installed):
``simdjson`` is pysimdjson's parse of the spans list into its own DOM, no Python objects (it refuses
invalid UTF-8, NaN, out-of-range numbers, lone surrogates, but keeps a repeated key);
``simdjson+fields`` adds what a loader must then read through its proxies: the span's keys, ids and
times, and each attribute's key and value object (the repeated-key check by counting them);
``jiter+dupkeys`` is jiter's parse with ``catch_duplicate_keys`` (it builds the objects, as orjson
does). ``make_step`` is the ``Step`` of an already decoded span record, per step.
"""

import gc
import sys
import tempfile
from pathlib import Path
from typing import Any

import callgrindlib
import orjson
from callgrind_load import build

from otel_agent_replay import load_tape
from otel_agent_replay.tape._read import TapeReader

_FRAME_END = b"}]}]}\n"
MODES = (
    "orjson.loads",
    "orjson.loads+dumps",
    "msgspec",
    "msgspec+encode",
    "simdjson",
    "simdjson+fields",
    "jiter+dupkeys",
    "make_step",
    "TapeReader",
    "load_tape",
)
_OPTIONAL = {"msgspec": "msgspec", "simdjson": "simdjson", "jiter": "jiter"}


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


def _simdjson_fields(parser: Any, text: bytes) -> int:
    """Parse with pysimdjson and read what places a step and proves no attribute key repeats."""
    spans = parser.parse(text)
    span = spans[0]
    keys = tuple(span.keys())
    placing = (span["traceId"], span["spanId"], span.get("parentSpanId"), span["startTimeUnixNano"])
    seen = set()
    for kv in span["attributes"]:
        value = kv["value"]
        if len(kv) != 2 or len(value) != 1:
            raise ValueError("not the exporter's shape")
        seen.add(kv["key"])
    del spans, span, kv, value
    return len(keys) + len(placing) + len(seen)


def _step_inputs(path: str) -> list[tuple[Any, ...]]:
    """``make_step``'s arguments for every step span of the file (decoded once, outside the count)."""
    from otel_agent_replay.core import attributes as A
    from otel_agent_replay.tape import iter_spans

    names = (A.KIND, A.GEN_AI_TOOL_NAME, A.GEN_AI_TOOL_CALL_ARGUMENTS, A.SEQ, A.STEP_ID, A.CALL_KEY, A.RUN_ID)
    return [(*(r.attributes[name] for name in names), r) for r in iter_spans(path) if A.SEQ in r.attributes]


def passes(mode: str, path: str, n: int) -> None:
    """What runs under callgrind: a warm-up pass, then ``n`` passes of ``mode``."""
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    start = lines[1].index(b'"spans":') + len(b'"spans":')
    texts = [line[start : -len(_FRAME_END)] for line in lines]
    decode, encode = _msgspec_codec() if mode.startswith("msgspec") else (None, None)
    parser: Any = None
    if mode.startswith("simdjson"):
        import simdjson

        parser = simdjson.Parser()
    if mode == "jiter+dupkeys":
        import jiter
    if mode == "make_step":
        from otel_agent_replay.tape._build import make_step

        inputs = _step_inputs(path)
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
        elif mode == "simdjson":
            for text in texts:
                doc = parser.parse(text)
                del doc  # pysimdjson reuses its parser only once the document is gone
        elif mode == "simdjson+fields":
            for text in texts:
                _simdjson_fields(parser, text)
        elif mode == "jiter+dupkeys":
            for text in texts:
                jiter.from_json(text, catch_duplicate_keys=True, allow_inf_nan=False, cache_mode="keys")
        elif mode == "make_step":
            for args in inputs:
                make_step(*args)
        gc.enable()


def instructions(mode: str, path: Path, n: int) -> int:
    """Instructions of one child run under callgrind."""
    return callgrindlib.instructions(__file__, mode, str(path), str(n))


def main(only: list[str]) -> None:
    modes = tuple(m for m in MODES if not only or any(m.startswith(o) for o in only))
    for prefix, module in _OPTIONAL.items():
        try:
            __import__(module)
        except ImportError:
            modes = tuple(m for m in modes if not m.startswith(prefix))
            print(f"({module} not installed: its rows are left out)")
    with tempfile.TemporaryDirectory(prefix="callgrind-parsers-") as work:
        path = Path(work) / "clean.jsonl"
        lines = build(path, varied=False)
        print(f"instructions per line, clean tape ({path.stat().st_size / lines / 1000:.2f} KB/line)")
        for mode in modes:
            one, three = instructions(mode, path, 1), instructions(mode, path, 3)
            print(f"{mode:<20} {(three - one) / 2 / lines:>10,.0f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] in MODES:
        passes(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main(sys.argv[2:] if sys.argv[1:2] == ["--only"] else [])
