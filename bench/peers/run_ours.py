"""Ours: ``@tool`` + ``agent_run`` inside ``record(path)``, run by ``bench_peers.py`` in this repo's venv.

As in ``bench_record.py``: the application's provider is the global one, a ``BatchSpanProcessor`` to
a discarding exporter (an OTLP stand-in), and ``record()`` adds its router, which writes every step
synchronously and losslessly to a tape on disk (the default temporary folder). After the loop the
tape's step lines are counted: every call must be there.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import orjson
import peerlib
from benchlib import DiscardExporter, time_loop
from opentelemetry import trace
from opentelemetry.exporter.agent_replay_tape._encode import LineEncoder
from opentelemetry.exporter.agent_replay_tape._writer import AppendWriter
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_args, capture_result
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import tool_spec


def main() -> None:
    plan = peerlib.Plan.from_argv(sys.argv)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter()))
    trace.set_tracer_provider(provider)

    @tool(name="search", side_effect="read_only")
    def search(customer_id: str, limit: int = 20) -> dict[str, object]:
        return peerlib.RESULT

    with tempfile.TemporaryDirectory(prefix="bench-peers-") as work:
        path = Path(work) / "ours.jsonl"
        before = peerlib.bare_sample(plan)
        with record(path) as rec, agent_run("bench"):
            call = peerlib.call_sample(plan, search)
        after = peerlib.bare_sample(plan)
        parts = breakdown(plan, search, Path(work)) if "--breakdown" in sys.argv else {}
        steps = 0
        with path.open("rb") as f:
            for line in f:
                if b'"gen_ai.tool.call.result"' in line:
                    steps += 1
        first = orjson.loads(path.read_bytes().splitlines()[0])
        tape_bytes = path.stat().st_size
    provider.shutdown()
    outcome = peerlib.Outcome(
        spans_made=peerlib.calls_made(plan),
        spans_exported=steps,
        notes=[
            f"tape lines with a result: {steps}; spans dropped: {rec.stats.spans_dropped}",
            f"tape {tape_bytes / 1e6:.1f} MB, first line keys: {sorted(first)[:4]}",
            *(f"breakdown: {name} {us:.1f} µs" for name, us in parts.items()),
        ],
    )
    packages = peerlib.versions("otel-agent-replay", "opentelemetry-exporter-agent-replay-tape")
    peerlib.emit(
        "ours (otel-agent-replay)",
        "@tool + agent_run in record(path)",
        "BatchSpanProcessor + record()'s tape writer (synchronous)",
        packages,
        before,
        call,
        after,
        outcome,
    )


class _KeepOne(SpanProcessor):
    """Keeps the first step span that ends after it is added, nothing else."""

    def __init__(self) -> None:
        self.span: ReadableSpan | None = None

    def on_end(self, span: ReadableSpan) -> None:
        if self.span is None and span.name.startswith("execute_tool "):
            self.span = span


def breakdown(plan: peerlib.Plan, search: Callable[..., object], work: Path) -> dict[str, float]:
    """Where ours' traced call goes, the parts timed alone in the same process (µs, medians)."""
    spec = tool_spec(search)
    assert spec is not None
    kwargs = {"customer_id": peerlib.CUSTOMER_ID, "limit": peerlib.LIMIT}
    bound = spec.binder((), kwargs)
    keep = _KeepOne()
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.add_span_processor(keep)  # it stays on the provider, but keeps only the one step below
    with record(work / "one.jsonl"), agent_run("bench"):
        search(**kwargs)
    span = keep.span
    assert span is not None
    attrs = dict(span.attributes or {})
    result_key = A.GEN_AI_TOOL_CALL_RESULT
    start_attrs = {k: v for k, v in attrs.items() if k != result_key}
    tracer = provider.get_tracer("bench.sdk")
    encoder = LineEncoder()
    line = encoder.encode(span)
    writer = AppendWriter(work / "writer.jsonl")

    def timed(body: Callable[[], object], n: int = 2_000) -> float:
        def loop(count: int) -> None:
            for _ in range(count):
                body()

        return time_loop(loop, n, plan.reps, 200).us

    def sdk_span() -> None:
        with tracer.start_as_current_span(span.name, attributes=start_attrs) as s:
            s.set_attribute(result_key, attrs[result_key])

    def unrecorded_loop() -> None:
        search(**kwargs)

    with agent_run("bench"):
        no_tape = timed(unrecorded_loop)

    def bare_span() -> None:
        with tracer.start_as_current_span("x"):
            pass

    parts = {
        "bare span": timed(bare_span),
        "SDK span with the step's 13 attributes, no capture": timed(sdk_span),
        "capture_args": timed(lambda: capture_args("search", bound, DEFAULT_CAPTURE)),
        "capture_result (JSON, plain-JSON walk, redaction check)": timed(
            lambda: capture_result(peerlib.RESULT, DEFAULT_CAPTURE)
        ),
        "LineEncoder.encode (the 6 KB OTLP JSON line)": timed(lambda: encoder.encode(span)),
        "AppendWriter.write (lock, flock, stat, write)": timed(lambda: writer.write(line)),
        "the same step in agent_run without record() (no tape)": no_tape,
    }
    writer.close()
    return parts


if __name__ == "__main__":
    main()
