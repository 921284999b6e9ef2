"""Logfire's ``@logfire.instrument``, run by ``bench_peers.py``.

``logfire.configure(send_to_logfire=False, console=False, ...)``: nothing leaves the process; the
only exporter is a discarding one behind a ``BatchSpanProcessor`` (``additional_span_processors``),
inside Logfire's own processor chain (its scrubbing included). ``record_return=True`` so the ~4 KB
result goes on the span as with the other peers (Logfire records the arguments by default).
"""

from __future__ import annotations

import os
import sys

import peerlib
from benchlib import DiscardExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor

os.environ.setdefault("LOGFIRE_SEND_TO_LOGFIRE", "false")

import logfire


def main() -> None:
    plan = peerlib.Plan.from_argv(sys.argv)
    exporter = DiscardExporter()
    logfire.configure(
        send_to_logfire=False,
        console=False,
        metrics=False,
        inspect_arguments=False,
        service_name="bench-peers",
        additional_span_processors=[BatchSpanProcessor(exporter)],
    )

    @logfire.instrument("search", record_return=True)
    def search(customer_id: str, limit: int = 20) -> dict[str, object]:
        return peerlib.RESULT

    before = peerlib.bare_sample(plan)
    call = peerlib.call_sample(plan, search)
    after = peerlib.bare_sample(plan)
    logfire.force_flush()
    logfire.shutdown()
    outcome = peerlib.Outcome(spans_made=peerlib.calls_made(plan), spans_exported=exporter.received)
    peerlib.emit(
        "Logfire",
        "@logfire.instrument(record_return=True)",
        "BatchSpanProcessor (additional_span_processors)",
        peerlib.versions("logfire"),
        before,
        call,
        after,
        outcome,
    )


if __name__ == "__main__":
    main()
