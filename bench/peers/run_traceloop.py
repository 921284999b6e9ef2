"""Traceloop's OpenLLMetry ``@tool`` (``traceloop-sdk``), run by ``bench_peers.py``.

``Traceloop.init(exporter=...)`` with a discarding exporter: Traceloop wraps it in its default
``BatchSpanProcessor`` (``disable_batch=False``); its telemetry is off (``TRACELOOP_TELEMETRY=false``),
no API key, and no endpoint is contacted (the exporter given replaces the OTLP one). Inputs and
outputs are traced (``TRACELOOP_TRACE_CONTENT`` on, its default).
"""

from __future__ import annotations

import os
import sys

import peerlib
from benchlib import DiscardExporter

os.environ["TRACELOOP_TELEMETRY"] = "false"
os.environ.pop("TRACELOOP_API_KEY", None)
os.environ["TRACELOOP_METRICS_ENABLED"] = "false"
os.environ["TRACELOOP_LOGGING_ENABLED"] = "false"

from traceloop.sdk import Traceloop
from traceloop.sdk.decorators import tool


def main() -> None:
    plan = peerlib.Plan.from_argv(sys.argv)
    exporter = DiscardExporter()
    Traceloop.init(
        app_name="bench-peers",
        api_endpoint="http://127.0.0.1:9",
        exporter=exporter,
        disable_batch=False,
        telemetry_enabled=False,
    )

    @tool(name="search")
    def search(customer_id: str, limit: int = 20) -> dict[str, object]:
        return peerlib.RESULT

    before = peerlib.bare_sample(plan)
    call = peerlib.call_sample(plan, search)
    after = peerlib.bare_sample(plan)
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    provider.force_flush()  # type: ignore[attr-defined]
    provider.shutdown()  # type: ignore[attr-defined]
    outcome = peerlib.Outcome(spans_made=peerlib.calls_made(plan), spans_exported=exporter.received)
    peerlib.emit(
        "Traceloop (OpenLLMetry)",
        "@tool",
        "BatchSpanProcessor (Traceloop.init default)",
        peerlib.versions("traceloop-sdk"),
        before,
        call,
        after,
        outcome,
    )


if __name__ == "__main__":
    main()
