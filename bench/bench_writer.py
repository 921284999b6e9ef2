"""The tape writer's check that the file was not changed underneath it (issue 23): what it costs.

Usage::

    .venv/bin/python bench/bench_writer.py            # 20,000 appends per round, 7 rounds
    .venv/bin/python bench/bench_writer.py --n 5000   # fewer

``AppendWriter.append`` of one 1.8 KB line (a step-sized tape line) to a tape on disk, with the
check (one ``pread`` of our last line) and, alternating in the same process, with the check
replaced by a function that returns at once. The difference is the check's cost per append. Each
figure is the median of the rounds, with the fastest and slowest. Run it on a quiet machine: it
prints the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.exporter.agent_replay_tape._writer import AppendWriter

LINE = (
    b'{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{"name":"b"},"spans":[{"name":"'
    + b"x" * 1750
    + b'"}]}]}]}\n'
)


def _round(folder: Path, n: int, check: bool) -> float:
    path = folder / f"t-{check}.jsonl"
    path.unlink(missing_ok=True)
    writer = AppendWriter(path)
    if not check:
        skip: Any = lambda fd, size: (fd, size)  # noqa: E731
        writer._check_underneath = skip  # type: ignore[method-assign]
    lines = (LINE,)
    writer.append(lines)
    start = time.perf_counter_ns()
    for _ in range(n):
        writer.append(lines)
    elapsed = time.perf_counter_ns() - start
    writer.close()
    return elapsed / n / 1000


def _check_alone(folder: Path, n: int) -> float:
    """The check by itself, on a tape whose last line is ours: the usual case."""
    path = folder / "alone.jsonl"
    path.unlink(missing_ok=True)
    writer = AppendWriter(path)
    writer.append((LINE,) * 100)
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    check = writer._check_underneath
    start = time.perf_counter_ns()
    for _ in range(n):
        check(fd, size)
    elapsed = time.perf_counter_ns() - start
    os.close(fd)
    writer.close()
    return elapsed / n / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="appends per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with_check, without, alone = [], [], []
        for _ in range(args.rounds):
            with_check.append(_round(folder, args.n, True))
            without.append(_round(folder, args.n, False))
            alone.append(_check_alone(folder, args.n))
    for name, times in (("append with the check", with_check), ("append without it", without)):
        print(f"{name:<24} {statistics.median(times):6.2f} µs  ({min(times):.2f}..{max(times):.2f})")
    diff = [a - b for a, b in zip(with_check, without, strict=True)]
    print(f"{'difference':<24} {statistics.median(diff):6.2f} µs  ({min(diff):.2f}..{max(diff):.2f})")
    print(f"{'the check alone':<24} {statistics.median(alone):6.2f} µs  ({min(alone):.2f}..{max(alone):.2f})")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
