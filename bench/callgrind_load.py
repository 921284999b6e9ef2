"""``load_tape``'s instructions per line against ``orjson.loads`` of the same lines, under callgrind.

Run it as a script (not a test; valgrind must be installed)::

    .venv/bin/python bench/callgrind_load.py          # about 6 minutes (8 runs under valgrind)

Instruction counts do not depend on the machine's load, so this is the figure to compare the
loader by on a shared machine, where MB/s swing by 2-3x between runs. For each tape (1,050 steps of
the clean 1.8 KB lines and of the varied 2.0 KB lines of ``bench_record.py`` section 4) it runs,
under ``valgrind --tool=callgrind``, one warm-up load and then 1 or 3 timed passes of either
``load_tape`` or a plain ``orjson.loads`` of every line, and takes (3 passes - 1 pass) / 2 / lines:
the start of the interpreter and the warm-up cancel out.

``--profile`` prints instead a cProfile of one ``load_tape`` of the varied tape (no valgrind): the
shares of the loader's own functions.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import sys
import tempfile
from pathlib import Path

import callgrindlib
import orjson
from bench_record import LIMIT, QUERY, prose, sized_tool, varied_tool

from otel_agent_replay import agent_run, load_tape, record

RUNS = 50
STEPS_PER_RUN = 20


def build(path: Path, varied: bool) -> int:
    """A tape of ``RUNS`` runs of ``STEPS_PER_RUN`` steps; returns its number of lines."""
    fn = varied_tool(64) if varied else sized_tool({"status": 200, "body": prose(64, seed=3)})
    with record(path):
        for _ in range(RUNS):
            with agent_run("bench-load"):
                for _ in range(STEPS_PER_RUN):
                    fn(query=QUERY, limit=LIMIT)
    with path.open("rb") as f:
        return sum(1 for _ in f)


def passes(mode: str, path: str, n: int) -> None:
    """What runs under callgrind: a warm-up load, then ``n`` passes of ``mode``."""
    load_tape(path)
    for _ in range(n):
        if mode == "load_tape":
            load_tape(path)
            continue
        gc.disable()
        with open(path, "rb", buffering=1 << 20) as f:
            for raw in f:
                orjson.loads(raw)
        gc.enable()


def instructions(mode: str, path: Path, n: int) -> int:
    """Instructions of one child run under callgrind."""
    return callgrindlib.instructions(__file__, mode, str(path), str(n))


def main() -> None:
    print("instructions per line (callgrind; (3 passes - 1 pass) / 2 / lines)")
    print(f"{'tape':<28} {'load_tape':>10} {'orjson.loads':>13} {'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="callgrind-load-") as work:
        for label, varied in (("clean", False), ("varied", True)):
            path = Path(work) / f"{label}.jsonl"
            lines = build(path, varied)
            size = path.stat().st_size
            per_line = {}
            for mode in ("load_tape", "orjson.loads"):
                one, three = instructions(mode, path, 1), instructions(mode, path, 3)
                per_line[mode] = (three - one) / 2 / lines
            load, parse = per_line["load_tape"], per_line["orjson.loads"]
            name = f"{label} ({size / lines / 1000:.2f} KB/line)"
            print(f"{name:<28} {load:>10,.0f} {parse:>13,.0f} {load / parse:>5.2f}x")


def profile() -> None:
    with tempfile.TemporaryDirectory(prefix="callgrind-load-") as work:
        path = Path(work) / "varied.jsonl"
        lines = build(path, varied=True)
        load_tape(path)
        profiler = cProfile.Profile()
        profiler.runcall(load_tape, path)
        print(f"cProfile of load_tape on {lines:,} varied lines")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    if sys.argv[1:] == ["--profile"]:
        profile()
    elif len(sys.argv) == 4:
        passes(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main()
