"""Ours: ``@tool`` + ``agent_run`` inside ``record(path)``, run by ``bench_peers.py`` in this repo's venv.

As in ``bench_record.py``: the application's provider is the global one, a ``BatchSpanProcessor`` to
a discarding exporter (an OTLP stand-in), and ``record()`` adds its router, which writes every step
synchronously and losslessly to a tape on disk (the default temporary folder). After the loop the
tape's step lines are counted: every call must be there.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import orjson
import peerlib
from benchlib import DiscardExporter
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_agent_replay import agent_run, record, tool


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


if __name__ == "__main__":
    main()
