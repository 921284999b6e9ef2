"""Redaction's throughput shapes in instructions per KB of JSON, under callgrind (load-independent).

Run it as a script (not a test; valgrind must be installed)::

    .venv/bin/python bench/callgrind_redact.py                              # every shape, about 4 minutes
    .venv/bin/python bench/callgrind_redact.py --only "configuration files" # one shape

``bench_redact_throughput.py`` times ``capture_result`` on each shape of ``redact_corpus.shapes()``; on a
shared machine those times swing with the load, so a change of the one pass is compared here instead. For
each shape, ``capture_result`` of the shape's document runs in two children under ``valgrind
--tool=callgrind`` (3 warm-up calls, then 3 or 13 more), and the figure is (the long run - the short run) /
10: the interpreter's start, the imports, building the corpus and the warm-up cancel out. Printed: the
instructions of one call and per KB of JSON. The same document is captured each time, as in the timed
bench's first column (its "fresh" column, first sight of a document, is not counted here).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import callgrindlib  # noqa: E402
import redact_corpus  # noqa: E402

WARMUP = 3
SHORT, LONG = 3, 13


def child(shape: str, n: int) -> None:
    """What runs under callgrind: ``WARMUP`` captures of the shape's document, then ``n`` more."""
    from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_result

    document = redact_corpus.shapes()[shape]
    for _ in range(WARMUP + n):
        capture_result(document, DEFAULT_CAPTURE)


def main(argv: list[str] | None = None) -> int:
    shapes = list(redact_corpus.SHAPES)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=shapes, default=shapes)
    parser.add_argument("--child", nargs=2, metavar=("SHAPE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    import orjson

    documents = redact_corpus.shapes()
    print(f"capture_result, instructions (callgrind; ({LONG} calls - {SHORT} calls) / {LONG - SHORT})")
    print(f"  {'shape':<22} {'KB':>6} {'per call':>14} {'per KB':>10}")
    for shape in args.only:
        size = len(orjson.dumps(documents[shape])) / 1000
        long = callgrindlib.instructions(__file__, "--child", shape, str(LONG))
        short = callgrindlib.instructions(__file__, "--child", shape, str(SHORT))
        per_call = (long - short) / (LONG - SHORT)
        print(f"  {shape:<22} {size:>6.1f} {per_call:>14,.0f} {per_call / size:>10,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
