"""Redaction's cost per step: capturing the 4 KB document, the 20-record result and the peers' result.

Run it as a script, from this repo's venv (or with ``PYTHONPATH`` pointing at another checkout of
the package, to compare two versions on the same machine in the same session)::

    .venv/bin/python bench/bench_redaction.py          # ~20 s
    .venv/bin/python bench/bench_redaction.py --json out.json

The first row is the peers' traced call whole (as ``bench_peers.py`` times it, but in CPU time);
the others are ``capture_args`` or ``capture_result`` alone (JSON, the redaction pre-check, and the
walk when the pre-check cannot rule a secret out), best of 9 repetitions of 2,000 calls, in CPU µs
per call. The "+ a secret" rows put one token into the last note, so the value is walked and redacted.
See bench/README.md, "Secrets that generalize (issue 22)".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "peers")]

import bench_record  # noqa: E402
import peerlib  # noqa: E402

import otel_agent_replay  # noqa: E402
from otel_agent_replay import agent_run, record, tool  # noqa: E402
from otel_agent_replay.capture import DEFAULT_CAPTURE, DEFAULT_REDACTOR, capture_args, capture_result  # noqa: E402

_TOKEN = "gh" + "p_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"


_CLEAN = json.dumps(bench_record.RECORDS)[:4096]
"""Clean text of 4 KB: ids, notes, prices and dates (once ``tests/capture``'s timed test)."""


def _with_secret(value: Any) -> Any:
    text = json.dumps(value)
    cut = text.rfind("note")
    return json.loads(text[: cut + 8] + f"token {_TOKEN} " + text[cut + 8 :]) if cut > 0 else value


def _time(fn: Any, number: int = 2_000, repeat: int = 9) -> float:
    """Best CPU time per call in µs (process time: what this process spent, so other load on a shared
    machine, which only makes it wait, changes the figure far less than it changes wall time)."""
    fn()
    timer = timeit.Timer(fn, timer=time.process_time)
    return min(timer.repeat(number=number, repeat=repeat)) / number * 1e6


def _traced_call() -> float:
    """The peers' traced call: ``@tool`` + ``agent_run`` in ``record(path)``, the 4 KB result, CPU µs a call."""

    @tool(name="search", side_effect="read_only")
    def search(customer_id: str, limit: int = 20) -> dict[str, object]:
        return peerlib.RESULT

    with (
        tempfile.TemporaryDirectory(prefix="bench-redaction-") as work,
        record(Path(work) / "t.jsonl"),
        agent_run("bench"),
    ):
        return _time(lambda: search(customer_id="c_17", limit=20), number=1_000, repeat=9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    dirty = _with_secret(bench_record.RECORDS)
    assert _TOKEN not in capture_result(dirty, DEFAULT_CAPTURE).json
    results = {
        "package": str(Path(otel_agent_replay.__file__).parent),
        "load": os.getloadavg(),
        "rows": {
            "traced call: @tool + agent_run in record(path), the peers' 4 KB result": _traced_call(),
            "capture_args: search(customer_id='c_17', limit=20)": _time(
                lambda: capture_args("search", {"customer_id": "c_17", "limit": 20}, DEFAULT_CAPTURE)
            ),
            "capture_result: the peers' 4 KB result (20 orders)": _time(
                lambda: capture_result(peerlib.RESULT, DEFAULT_CAPTURE)
            ),
            "capture_result: bench_record's 20-record result": _time(
                lambda: capture_result(bench_record.RECORDS, DEFAULT_CAPTURE)
            ),
            "capture_result: bench_record's 4 KB document": _time(
                lambda: capture_result(bench_record.DOCUMENT, DEFAULT_CAPTURE)
            ),
            "capture_result: the 20-record result + a secret (walked)": _time(
                lambda: capture_result(dirty, DEFAULT_CAPTURE), number=300
            ),
            "redact_text: a clean 4 KB string (every rule's pre-filter, nothing found)": _time(
                lambda: DEFAULT_REDACTOR.redact_text(_CLEAN), number=500
            ),
        },
    }
    print(f"package {results['package']}, load {results['load']}")
    for name, us in results["rows"].items():
        print(f"  {name:<62} {us:8.1f} µs")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
