"""OpenInference's ``@tracer.tool`` (``openinference-instrumentation``), run by ``bench_peers.py``.

Its ``TracerProvider`` (the SDK's, handing out ``OITracer``s) with a ``BatchSpanProcessor`` to a
discarding exporter; the tool's arguments and result go on the span as input/output values.
"""

from __future__ import annotations

import sys

import peerlib
from benchlib import DiscardExporter
from openinference.instrumentation import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def main() -> None:
    plan = peerlib.Plan.from_argv(sys.argv)
    exporter = DiscardExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("bench.peers")

    @tracer.tool(name="search")
    def search(customer_id: str, limit: int = 20) -> dict[str, object]:
        return peerlib.RESULT

    before = peerlib.bare_sample(plan)
    call = peerlib.call_sample(plan, search)
    after = peerlib.bare_sample(plan)
    provider.force_flush()
    provider.shutdown()
    outcome = peerlib.Outcome(spans_made=peerlib.calls_made(plan), spans_exported=exporter.received)
    peerlib.emit(
        "OpenInference",
        "@tracer.tool",
        "BatchSpanProcessor",
        peerlib.versions("openinference-instrumentation"),
        before,
        call,
        after,
        outcome,
    )


if __name__ == "__main__":
    main()
