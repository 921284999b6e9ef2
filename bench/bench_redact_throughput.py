"""Redaction's cost on realistic results: record throughput per shape, and the 4 KB step against a bare span.

Run it as a script, from this repo's venv (or with ``PYTHONPATH`` pointing at another checkout of the
package, to compare two versions on the same machine in the same session)::

    .venv/bin/python bench/bench_redact_throughput.py            # ~1 minute on 2 cores
    .venv/bin/python bench/bench_redact_throughput.py --quick    # fewer repetitions
    .venv/bin/python bench/bench_redact_throughput.py --json out.json
    .venv/bin/python bench/bench_redact_throughput.py --profile "log lines"   # cProfile of one shape

In one process it measures:

1. **throughput per shape**: ``capture_result`` (JSON, redaction on, size caps: what recording does to a
   tool's result) on each shape of ``redact_corpus.shapes()`` (about 100 KB of JSON each: catalogue rows,
   prose, log lines, source code, HTML, configuration files, base64 media), in MB of JSON a second of
   CPU time (best of the repetitions; CPU time, so the other load of a shared machine changes it less);
   beside it, "fresh": the best of capturing documents of the same shape from other seeds once each, whose
   ids, digests and runs no cache has seen (what an agent's next result costs; the target is on the first);
2. **the 4 KB step**: ``@tool`` + ``agent_run`` inside ``record(path)`` (the tape written to disk, the
   application's provider a ``BatchSpanProcessor`` to a discarding exporter) returning 50 small rows
   (about 4 KB of JSON), against a bare span (``start_as_current_span("x")``, no attributes) on the same
   kind of provider, measured before and after the steps in the same process: the ratio is to their mean
   (all in CPU time of the process, median of the repetitions).

Targets (issue 30): every shape at least 50 MB/s, the step at most 8 times the bare span. The script
prints PASS/FAIL per row and exits 1 when a target is missed. See bench/README.md, "Redaction in one pass".
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
import redact_corpus  # noqa: E402
from benchlib import DiscardExporter  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

from otel_agent_replay import agent_run, record, tool  # noqa: E402
from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_result  # noqa: E402

MB = 1_000_000
MIN_MB_S = 50.0
MAX_STEP_RATIO = 8.0


def _cpu_best(fn: Any, number: int, repeat: int) -> float:
    """Best CPU seconds per call of ``fn`` over ``repeat`` runs of ``number`` calls (after one warm call)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def _cpu_first(values: list[Any]) -> float:
    """Best CPU seconds of capturing each of ``values`` once (each a document never captured before)."""
    best = float("inf")
    for value in values:
        start = time.process_time()
        capture_result(value, DEFAULT_CAPTURE)
        best = min(best, time.process_time() - start)
    return best


def throughput(quick: bool) -> list[dict[str, Any]]:
    rows = []
    fresh = [redact_corpus.shapes(seed=seed) for seed in range(31, 34 if quick else 36)]
    for name, value in redact_corpus.shapes().items():
        size = len(orjson.dumps(value))
        number, repeat = (3, 3) if quick else (10, 5)
        seconds = _cpu_best(lambda value=value: capture_result(value, DEFAULT_CAPTURE), number, repeat)
        first = _cpu_first([shapes[name] for shapes in fresh])
        mb_s, fresh_mb_s = size / seconds / MB, size / first / MB
        rows.append({"shape": name, "bytes": size, "ms": seconds * 1e3, "mb_s": mb_s, "fresh_mb_s": fresh_mb_s})
    return rows


def _cpu_median_ns(loop: Any, n: int, reps: int) -> float:
    """Median CPU nanoseconds per operation of ``loop(n)`` over ``reps`` runs, after a warm-up."""
    loop(n // 4)
    out = []
    for _ in range(reps):
        start = time.process_time_ns()
        loop(n)
        out.append((time.process_time_ns() - start) / n)
    return statistics.median(out)


def _provider() -> TracerProvider:
    provider = TracerProvider()
    # a queue that never fills: a dropped span would cost less than an exported one
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=1 << 20))
    return provider


def _bare(provider: TracerProvider, n: int, reps: int) -> float:
    start = provider.get_tracer("bench.bare").start_as_current_span

    def loop(count: int) -> None:
        for _ in range(count):
            with start("x"):
                pass

    return _cpu_median_ns(loop, n, reps)


def step(quick: bool) -> dict[str, Any]:
    provider = _provider()
    trace.set_tracer_provider(provider)
    bare_provider = _provider()
    rows = redact_corpus.step_rows(50)
    n, reps = (1_000, 5) if quick else (3_000, 9)

    @tool(name="orders", side_effect="read_only")
    def orders(customer_id: str) -> list[dict[str, Any]]:
        return rows

    before = _bare(bare_provider, n * 4, reps)
    with tempfile.TemporaryDirectory(prefix="bench-redact-") as work, record(Path(work) / "t.jsonl"), agent_run("b"):

        def loop(count: int) -> None:
            for _ in range(count):
                orders(customer_id="c_17")

        step_ns = _cpu_median_ns(loop, n, reps)
    after = _bare(bare_provider, n * 4, reps)
    provider.shutdown()
    bare_provider.shutdown()
    bare_ns = (before + after) / 2
    return {
        "rows": len(rows),
        "bytes": len(orjson.dumps(rows)),
        "step_us": step_ns / 1e3,
        "bare_us": bare_ns / 1e3,
        "bare_drift_pct": (after - before) / before * 100,
        "ratio": step_ns / bare_ns,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--profile", metavar="SHAPE", help="print a cProfile of capture_result on one shape")
    args = parser.parse_args()
    if args.profile:
        value = redact_corpus.shapes()[args.profile]
        capture_result(value, DEFAULT_CAPTURE)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(5):
            capture_result(value, DEFAULT_CAPTURE)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return 0
    shapes = throughput(args.quick)
    stepped = step(args.quick)
    ok = True
    print(f"{'shape':<22} {'KB':>7} {'ms':>8} {'MB/s':>8} {'fresh':>8}  target >= {MIN_MB_S:.0f} MB/s")
    for row in shapes:
        passed = row["mb_s"] >= MIN_MB_S
        ok &= passed
        print(
            f"{row['shape']:<22} {row['bytes'] / 1e3:7.1f} {row['ms']:8.3f} {row['mb_s']:8.1f} "
            f"{row['fresh_mb_s']:8.1f}  {'PASS' if passed else 'FAIL'}"
        )
    passed = stepped["ratio"] <= MAX_STEP_RATIO
    ok &= passed
    print(
        f"\n4 KB step ({stepped['rows']} rows, {stepped['bytes']} B of JSON): {stepped['step_us']:.1f} µs, "
        f"bare span {stepped['bare_us']:.2f} µs (drift {stepped['bare_drift_pct']:+.1f}%), "
        f"ratio {stepped['ratio']:.1f}x  target <= {MAX_STEP_RATIO:.0f}x  {'PASS' if passed else 'FAIL'}"
    )
    if args.json:
        args.json.write_text(json.dumps({"shapes": shapes, "step": stepped}, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
