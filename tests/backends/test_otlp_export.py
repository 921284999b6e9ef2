"""record(..., otlp=...): the same spans to a real OTLP receiver, never at the tape's or the agent's expense."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.otlp_receiver import Received, attrs_of, closed_port, grpc_receiver, http_receiver
from helpers.rawtape import raw_spans

from otel_agent_replay import ConfigurationError, agent_run, load_tape, model_call, record, tool
from otel_agent_replay.backends._otlp_config import content_capture_enabled
from otel_agent_replay.backends._otlp_export import strip_content
from otel_agent_replay.core import OtlpWarning
from otel_agent_replay.core import attributes as A


@tool(side_effect="read_only")
def lookup(customer: str, token: str = "") -> dict[str, Any]:
    return {"customer": customer, "plan": "pro"}


SECRET_BODY = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
"""A GitHub token's body (after ``ghp_``): on the tape only as a stand-in of its shape, never itself."""


@model_call(provider="stand-in", model="m-1")
def decide(messages: list[dict[str, str]], system: str = "") -> dict[str, Any]:
    return {"choices": [{"role": "assistant", "content": "call lookup"}], "usage": {"input_tokens": 3}}


def _agent(steps: int = 2) -> str:
    with agent_run("support", input={"ticket": "T-1"}) as run:
        decide([{"role": "user", "content": "who is c_1?"}], system="Be brief.")  # gen_ai.system_instructions
        for i in range(steps - 1):
            lookup(f"c_{i}", token="ghp_" + SECRET_BODY)
        run.set_output({"answer": "pro"})
    return run.run_id


@pytest.fixture(autouse=True)
def _content_switch_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)


def test_an_explicit_endpoint_gets_every_span_of_the_recording(tape: Path) -> None:
    with http_receiver() as (url, got), record(tape, otlp=url) as rec:
        _agent(steps=3)
    on_tape = raw_spans(tape)
    sent = got.by_id()
    assert sorted(sent) == sorted(s.span_id for s in on_tape) and len(on_tape) == 4
    for raw in on_tape:
        span = sent[raw.span_id]
        assert span.name == raw.name and span.parent_span_id.hex() == raw.span.get("parentSpanId", "")
        assert span.start_time_unix_nano == int(raw.span["startTimeUnixNano"])
        assert attrs_of(span)[A.RUN_ID] == raw.attrs[A.RUN_ID]
    assert set(got.paths) == {"/v1/traces"}
    stats = rec.otlp_stats
    assert stats is not None and (stats.queued, stats.exported, stats.failed, stats.unconfirmed) == (4, 4, 0, 0)


def test_refused_connections_the_agent_finishes_with_a_warning_and_a_count(tape: Path) -> None:
    port = closed_port()
    with pytest.warns(OtlpWarning) as warned, record(tape, otlp=f"http://127.0.0.1:{port}") as rec:
        run_id = _agent(steps=4)
    (run,) = load_tape(tape).runs
    assert run.run_id == run_id and run.complete and len(run.steps) == 4  # the tape has every span
    stats = rec.otlp_stats
    assert stats is not None and stats.queued == 5 and stats.exported == 0
    assert stats.failed + stats.unconfirmed == 5 and stats.failed >= 1
    text = str(warned[0].message)
    assert f"127.0.0.1:{port}" in text and "refused" in text.lower() and "5 of 5" in text
    assert f"otel-agent-replay push {tape}" in text


def test_a_long_recording_logs_the_failure_once_and_keeps_going(
    tape: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")  # the batch processor exports every 20 ms
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    caplog.set_level(logging.WARNING, logger="otel_agent_replay.otlp")
    with pytest.warns(OtlpWarning), record(tape, otlp=f"http://127.0.0.1:{closed_port()}") as rec:
        deadline = time.monotonic() + 10
        runs = 0
        while (rec.otlp_stats is None or rec.otlp_stats.failed == 0) and time.monotonic() < deadline:
            _agent(steps=1)
            runs += 1
            time.sleep(0.05)
        for _ in range(5):  # later runs while the endpoint is down: skipped quickly, not logged again
            _agent(steps=1)
            runs += 1
            time.sleep(0.05)
    assert rec.otlp_stats is not None and rec.otlp_stats.failed >= 2
    logged = [r for r in caplog.records if r.name == "otel_agent_replay.otlp"]
    assert len(logged) == 1 and "the tape keeps every span" in logged[0].getMessage()
    assert len(load_tape(tape).runs) == runs


def test_a_slow_endpoint_holds_up_neither_the_agent_nor_the_end_of_the_recording(tape: Path) -> None:
    hold = threading.Event()  # the endpoint answers only once the test lets it, after the recording
    with http_receiver(hold=hold) as (url, got):
        try:
            with (
                pytest.warns(OtlpWarning, match="unanswered after 0.5s"),
                record(tape, otlp=url, otlp_flush_timeout=0.5) as rec,
            ):
                _agent(steps=3)
                agent_done_unanswered = not got.answered.is_set()
            ended_unanswered = not got.answered.is_set()
            stats = rec.otlp_stats  # as the recording left them, before the answer comes
        finally:
            hold.set()
    assert agent_done_unanswered, "the agent waited for the endpoint's answer"
    assert ended_unanswered, "the end of the recording waited for the endpoint's answer"
    assert len(raw_spans(tape)) == 4
    assert stats is not None and stats.queued == 4 and stats.exported == 0 and stats.unconfirmed == 4
    assert len(got.spans()) == 4  # they were sent; the answer never came in time


def _content(spans: dict[str, dict[str, Any]]) -> set[str]:
    return {key for attrs in spans.values() for key in attrs if key in A.CONTENT_ATTRIBUTES}


@pytest.mark.parametrize("switch", [None, "false", "true", "SPAN_ONLY"])
def test_content_goes_to_otlp_only_when_the_genai_switch_is_on(
    tape: Path, monkeypatch: pytest.MonkeyPatch, switch: str | None
) -> None:
    if switch is not None:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", switch)
    with http_receiver() as (url, got), record(tape, otlp=url) as rec:
        _agent(steps=2)
    on_tape = {s.span_id: s.attrs for s in raw_spans(tape)}
    sent = {span_id: attrs_of(span) for span_id, span in got.by_id().items()}
    assert sorted(sent) == sorted(on_tape)
    assert _content(on_tape) == A.CONTENT_ATTRIBUTES
    on_disk = tape.read_bytes()
    assert SECRET_BODY.encode() not in on_disk  # the tape's content is redacted (a stand-in keeps only ghp_)
    on = switch in ("true", "SPAN_ONLY")
    assert _content(sent) == (_content(on_tape) if on else set())
    for span_id, attrs in sent.items():
        tape_attrs = on_tape[span_id]
        expected = tape_attrs if on else {k: v for k, v in tape_attrs.items() if k not in A.CONTENT_ATTRIBUTES}
        assert attrs == expected  # everything else is the same, value for value
    assert rec.otlp_stats is not None and rec.otlp_stats.content_stripped == (0 if on else 3)


def test_the_content_option_overrides_the_switch(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    with http_receiver() as (url, got), record(tape, otlp=url, otlp_content=True):
        _agent(steps=2)
    assert any(A.GEN_AI_TOOL_CALL_ARGUMENTS in attrs_of(s) for s in got.spans())


def test_switch_values() -> None:
    for on in ("true", "TRUE", " True ", "span_only", "SPAN_AND_EVENT"):
        assert content_capture_enabled(on)
    for off in ("", "false", "NO_CONTENT", "event_only", "maybe"):
        assert not content_capture_enabled(off)


def test_strip_content_keeps_the_rest_of_the_span(tape: Path) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()  # record(otlp=...) takes any OpenTelemetry exporter
    with record(tape, otlp=memory, otlp_content=True) as rec, agent_run("a"):
        lookup("c_9")
    assert rec.otlp_stats is not None and rec.otlp_stats.exported == 2
    span = next(s for s in memory.get_finished_spans() if s.name == "execute_tool lookup")
    stripped = strip_content(span)
    assert stripped is not span and span.attributes is not None and stripped.attributes is not None
    assert set(span.attributes) - set(stripped.attributes) == {A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_TOOL_CALL_RESULT}
    assert (stripped.context, stripped.parent, stripped.start_time, stripped.end_time, stripped.status) == (
        span.context,
        span.parent,
        span.start_time,
        span.end_time,
        span.status,
    )
    assert stripped.resource is span.resource and stripped.instrumentation_scope == span.instrumentation_scope
    assert dict(stripped.attributes) == {k: v for k, v in span.attributes.items() if k not in A.CONTENT_ATTRIBUTES}
    clean = strip_content(stripped)
    assert clean is stripped


def test_grpc_protocol_from_the_variables(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with grpc_receiver() as (url, got), record(tape, otlp=url) as rec:
        _agent(steps=2)
    assert sorted(got.by_id()) == sorted(s.span_id for s in raw_spans(tape))
    assert rec.otlp_stats is not None and rec.otlp_stats.exported == 3


@pytest.mark.parametrize(
    ("option", "words"),
    [(123, "give True, False, an endpoint URL"), ("localhost:4318", "is not a URL"), ("ftp://x", "is not a URL")],
)
def test_bad_options_are_configuration_errors(tape: Path, option: Any, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words), record(tape, otlp=option):
        pass


def test_an_unknown_protocol_is_refused(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(ConfigurationError, match="'http/json' is not supported"), record(tape, otlp=True):
        pass
    with pytest.raises(ConfigurationError, match="otlp_flush_timeout"):
        record(tape, otlp_flush_timeout=-1)


_APP_PROVIDER = textwrap.dedent(
    """
    import sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from otel_agent_replay import agent_run, record, tool

    @tool(side_effect="read_only")
    def ping(n: int) -> int:
        return n

    if sys.argv[2] == "app":
        trace.set_tracer_provider(TracerProvider())
    option = {"none": None, "true": True, "false": False}[sys.argv[3]]
    with record(sys.argv[1], otlp=option) as rec, agent_run("a"):
        ping(1)
    print(None if rec.otlp_stats is None else rec.otlp_stats.exported)
    """
)


@pytest.mark.parametrize(
    ("provider", "option", "exported"),
    [("ours", "none", "2"), ("app", "none", "None"), ("app", "true", "2"), ("ours", "false", "None")],
)
def test_the_variables_apply_to_the_provider_record_set_up(
    tmp_path: Path, provider: str, option: str, exported: str
) -> None:
    with http_receiver() as (url, got):
        env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=url, OTEL_SERVICE_NAME="svc-under-test")
        done = subprocess.run(
            [sys.executable, "-c", _APP_PROVIDER, str(tmp_path / "t.jsonl"), provider, option],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == exported
    assert len(got.spans()) == (0 if exported == "None" else 2)
    if got.spans():
        assert got.resource_values(A.SERVICE_NAME) == {"svc-under-test"}


def test_receiver_helper_sees_headers_from_the_variables(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents")
    received: Received
    with http_receiver() as (url, received), record(tape, otlp=url):
        _agent(steps=1)
    assert received.headers and received.headers[0]["x-team"] == "agents"
