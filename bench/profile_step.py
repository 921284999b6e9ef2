"""The 4 KB recorded step of ``bench_redact_throughput.py``, taken apart: where its time goes.

Run it as a script (not a test)::

    .venv/bin/python bench/profile_step.py            # the step against a bare span, and its parts alone
    .venv/bin/python bench/profile_step.py --profile  # a cProfile of 3,000 steps (--sort tottime)
    .venv/bin/python bench/profile_step.py --without  # the step with its parts taken out, in one process

The step is the same as ``bench_redact_throughput.py``'s: ``@tool`` + ``agent_run`` in ``record(path)``
returning ``redact_corpus.step_rows(50)``, the application's provider a ``BatchSpanProcessor`` to a
discarding exporter. The parts are timed alone on the same data (best of 5 x 2,000 calls, CPU time).
See bench/README.md, "The 4 KB step".
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
import redact_corpus  # noqa: E402
from benchlib import DiscardExporter  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.agent_replay_tape import LineEncoder  # noqa: E402
from opentelemetry.exporter.agent_replay_tape._writer import AppendWriter  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

from otel_agent_replay import agent_run, record, tool  # noqa: E402
from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_result  # noqa: E402


def _provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter(), max_queue_size=1 << 20))
    return provider


def _alone(fn: Any, n: int = 2000) -> float:
    """Best CPU µs per call of ``fn``."""
    fn()
    return min(timeit.repeat(fn, number=n, repeat=5, timer=time.process_time)) / n * 1e6


def parts(rows: list[dict[str, Any]]) -> None:
    captured = capture_result(rows, DEFAULT_CAPTURE)
    tracer = TracerProvider().get_tracer("bench.parts")
    attrs: dict[str, Any] = {f"agent_replay.a{i}": "v" * 20 for i in range(12)}
    attrs["gen_ai.tool.call.result"] = captured.json
    span = tracer.start_span("execute_tool orders", attributes=attrs)
    span.end()
    encoder = LineEncoder()
    line = encoder.encode(span)  # type: ignore[arg-type]
    print(f"capture_result of the rows       {_alone(lambda: capture_result(rows, DEFAULT_CAPTURE)):8.1f} µs")
    print(f"  orjson.dumps of the rows       {_alone(lambda: orjson.dumps(rows)):8.1f} µs")
    print(f"start_span, 13 attributes + end  {_alone(lambda: tracer.start_span('s', attributes=attrs).end()):8.1f} µs")
    print(f"start_span bare + end            {_alone(lambda: tracer.start_span('x').end()):8.1f} µs")
    print(f"LineEncoder.encode ({len(line)} B)   {_alone(lambda: encoder.encode(span)):8.1f} µs")  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory(prefix="bench-step-") as work:
        writer = AppendWriter(Path(work) / "t.jsonl")
        print(f"AppendWriter.append of the line  {_alone(lambda: writer.append((line,))):8.1f} µs")
        writer.close()
    # the same capture with other work between calls, as in the step: what the caches' eviction adds
    big = rows * 20
    with tempfile.TemporaryFile() as scratch:
        fd = scratch.fileno()
        print(f"  {len(line)} B os.write alone        {_alone(lambda: os.write(fd, line)):8.1f} µs")
        both = _alone(lambda: (capture_result(rows, DEFAULT_CAPTURE), os.write(fd, line)))
        print(f"capture_result, then that write  {both:8.1f} µs")
    print(f"orjson.dumps of {len(big)} rows       {_alone(lambda: orjson.dumps(big), 200):8.1f} µs")
    both = _alone(lambda: (capture_result(rows, DEFAULT_CAPTURE), orjson.dumps(big)), 200)
    print(f"capture_result, then those dumps {both:8.1f} µs")


def without(orders: Any, rows: list[dict[str, Any]], bare: Any) -> None:
    """The step in-process with a part taken out at a time: what each part costs inside the step
    (caches, allocation and the file as the real step has them), not alone."""
    import opentelemetry.exporter.agent_replay_tape as tape
    from opentelemetry.sdk.trace.export import SpanExportResult

    import otel_agent_replay.instrumentation._steps as steps

    captured = capture_result(rows, DEFAULT_CAPTURE)
    real_capture, real_export = steps.capture_result, tape.TapeSpanExporter.export

    def encode_only(self: Any, spans: Any) -> SpanExportResult:
        for span in spans:
            self._encoder.encode(span)
        return SpanExportResult.SUCCESS

    cases: list[tuple[str, Any, Any]] = [
        ("the step", real_capture, real_export),
        ("without capture_result", lambda r, c: captured, real_export),
        ("  and the tape's append", lambda r, c: captured, encode_only),
        ("  and the tape's encoding", lambda r, c: captured, lambda self, spans: SpanExportResult.SUCCESS),
    ]
    try:
        for label, capture, export in cases:
            steps.capture_result, tape.TapeSpanExporter.export = capture, export  # type: ignore[method-assign]
            with (
                tempfile.TemporaryDirectory(prefix="bench-step-") as work,
                record(Path(work) / "t.jsonl"),
                agent_run("b"),
            ):
                for _ in range(300):
                    orders(customer_id="c_17")
                best = min(_timed(lambda: orders(customer_id="c_17"), 1500) for _ in range(5))
            one = _timed(bare, 6000)
            print(f"{label:28s} {best / 1e3:7.1f} µs   bare span {one / 1e3:5.2f} µs   {best / one:5.1f}x")
    finally:
        steps.capture_result, tape.TapeSpanExporter.export = real_capture, real_export  # type: ignore[method-assign]


def _timed(fn: Any, n: int) -> float:
    """CPU nanoseconds per call of ``fn`` over ``n`` calls."""
    start = time.process_time_ns()
    for _ in range(n):
        fn()
    return (time.process_time_ns() - start) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="print a cProfile of 3,000 steps")
    parser.add_argument("--sort", default="cumulative", help="the profile's order (cumulative, tottime)")
    parser.add_argument("--without", action="store_true", help="the step with capture, append, encoding taken out")
    args = parser.parse_args()
    trace.set_tracer_provider(_provider())
    bare = _provider().get_tracer("bench.bare").start_as_current_span
    rows = redact_corpus.step_rows(50)

    @tool(name="orders", side_effect="read_only")
    def orders(customer_id: str) -> list[dict[str, Any]]:
        return rows

    def bare_loop(n: int) -> None:
        for _ in range(n):
            with bare("x"):
                pass

    def loop(n: int) -> None:
        for _ in range(n):
            orders(customer_id="c_17")

    if args.without:

        def one_bare() -> None:
            with bare("x"):
                pass

        without(orders, rows, one_bare)
        return 0

    with tempfile.TemporaryDirectory(prefix="bench-step-") as work, record(Path(work) / "t.jsonl"), agent_run("b"):
        loop(200)
        bare_loop(200)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            loop(3000)
            profiler.disable()
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(50)
            return 0
        for _ in range(5):
            start = time.process_time_ns()
            loop(2000)
            step = (time.process_time_ns() - start) / 2000
            start = time.process_time_ns()
            bare_loop(8000)
            one = (time.process_time_ns() - start) / 8000
            print(f"step {step / 1e3:.1f} µs, bare span {one / 1e3:.2f} µs, ratio {step / one:.1f}x")
    parts(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
