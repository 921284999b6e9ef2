"""What a decorated call costs in a Python process that joined its block, against the same call in the block's own.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/bench_joined.py              # about a minute on a loaded 2-core machine
    .venv/bin/python bench/bench_joined.py --calls 500

A read-only ``@tool`` called ``--calls`` times in the parent, then in a ``multiprocessing`` spawn child started
from the block (each of its calls a connection to the block's channel and a step of the parent's run),
recorded, then replayed strictly from that tape. Each figure is the wall time per call (the child's is
timed in the child, the spawn itself left out), and the ratio child / parent is what matters: the
machine's load moves both. ``AGENT_REPLAY_MITMDUMP`` is cleared for the run, so no proxy starts (a
joined call does not use it).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from otel_agent_replay import agent_run, record, replay, tool


@tool(side_effect="read_only")
def lookup(n: int) -> dict[str, int]:
    return {"n": n, "square": n * n}


def _calls(count: int) -> float:
    """Seconds per call of ``lookup``, here."""
    start = time.perf_counter()
    for n in range(count):
        lookup(n)
    return (time.perf_counter() - start) / count


def _child(count: int, out: str) -> None:
    Path(out).write_text(repr(_calls(count)), encoding="utf-8")


def _in_child(count: int, folder: Path) -> float:
    out = folder / "child.txt"
    child = multiprocessing.get_context("spawn").Process(target=_child, args=(count, str(out)))
    child.start()
    child.join(600)
    return float(out.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    options = parser.parse_args()
    os.environ["AGENT_REPLAY_MITMDUMP"] = os.devnull  # not an executable: no proxy starts
    warnings.simplefilter("ignore")  # the replay's child_processes warning, expected here
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        parent_tape, child_tape = folder / "parent.jsonl", folder / "child.jsonl"
        with record(folder / "warm.jsonl"), agent_run("warm-up"):  # the first calls of a process pay its setup
            _calls(50)
        with record(parent_tape), agent_run("bench"):
            parent_record = _calls(options.calls)
        with record(child_tape), agent_run("bench"):
            child_record = _in_child(options.calls, folder)
        with replay(parent_tape), agent_run("bench"):
            parent_replay = _calls(options.calls)
        with replay(child_tape), agent_run("bench"):
            child_replay = _in_child(options.calls, folder)
    print(f"{'per call':<10} {'parent':>10} {'joined child':>14} {'ratio':>7}")
    for name, parent, child in (("record", parent_record, child_record), ("replay", parent_replay, child_replay)):
        print(f"{name:<10} {parent * 1e6:>8.0f}us {child * 1e6:>12.0f}us {child / parent:>6.1f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
