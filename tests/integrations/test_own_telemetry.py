"""OpenTelemetry's own export, in the agent's thread, is not the agent's behaviour: never a step."""

from __future__ import annotations

from pathlib import Path

from helpers.otlp_receiver import http_receiver
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_agent_replay import agent_run, load_tape, record, replay, tool


@tool(side_effect="read_only")
def ping() -> str:
    return "pong"


def test_a_span_exported_in_the_agents_thread_is_neither_recorded_nor_refused(tape: Path) -> None:
    with http_receiver() as (url, got):
        provider = TracerProvider()  # the SDK marks its export with its suppress-instrumentation key
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
        tracer = provider.get_tracer("app")
        try:
            with record(tape), agent_run("a"):
                ping()
                tracer.start_span("while recording").end()  # requests → http.client, in this thread
            with replay(tape) as session, agent_run("a"):
                ping()
                tracer.start_span("while replaying").end()
        finally:
            provider.shutdown()
        assert [s.name for s in got.spans()] == ["while recording", "while replaying"]
    assert [step.tool for run in load_tape(tape).runs for step in run.steps] == ["ping"]
    assert session.stats.misses == 0 and session.stats.refused_side_effects == 0
