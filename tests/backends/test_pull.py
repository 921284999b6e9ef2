"""pull: traces from a Jaeger query API on 127.0.0.1 (api/v3 and classic) into tapes that replay."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.jaeger_json import tape_documents
from helpers.jaeger_server import FakeJaeger, jaeger_server
from helpers.otlp_receiver import closed_port
from helpers.rawtape import raw_spans
from opentelemetry import trace

from otel_agent_replay import ConfigurationError, Redactor, agent_run, load_tape, record, replay
from otel_agent_replay.backends import parse_duration, parse_time, pull
from otel_agent_replay.backends._jaeger_answer import redact_string
from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.cli._demo import record_demo, run_chain
from otel_agent_replay.core import EndpointError
from otel_agent_replay.core import attributes as A

_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _recorded(tmp_path: Path) -> tuple[Path, str, Path]:
    """The demo run, plus an HTTP span under it whose attributes carry secrets (as other tools export them).

    ``record`` redacts the application's own spans too, so the second run is recorded without the
    default rules: the tape then holds the secrets as a trace backend would, for ``pull`` to redact.
    """
    demo = record_demo(tmp_path / "demo")
    tracer = trace.get_tracer("app.http")
    with (
        record(demo.tape, redactor=Redactor(defaults=False)),
        agent_run("report-writer", run_id="second"),
        tracer.start_as_current_span("POST /search") as span,
    ):
        span.set_attribute("http.request.header.authorization", f"Bearer {_TOKEN}")
        span.set_attribute("app.request", orjson.dumps({"api_key": "k-123456", "q": "refund"}).decode())
        span.set_attribute("app.hosts", ["db.internal", f"token={_TOKEN}"])
    return demo.tape, demo.run_id, demo.report


def _service(tape: Path) -> str:
    doc = tape_documents(tape)[0]
    attrs = {kv["key"]: kv["value"] for kv in doc["resourceSpans"][0]["resource"]["attributes"]}
    return str(attrs[A.SERVICE_NAME]["stringValue"])


def _steps(path: Path) -> list[tuple[Any, ...]]:
    return [
        (
            s.seq,
            s.step_id,
            s.parent_step_id,
            s.tool,
            s.args_json,
            s.result_json,
            s.call_key,
            s.span_id,
            s.parent_span_id,
        )
        for run in load_tape(path).runs
        for s in run.steps
    ]


@pytest.mark.parametrize("api", ["v3", "classic"])
def test_pull_by_trace_id_writes_a_tape_that_replays(tmp_path: Path, api: str) -> None:
    tape, run_id, report = _recorded(tmp_path)
    (original,) = [r for r in load_tape(tape).runs if r.run_id == run_id]
    fake = FakeJaeger(tape_documents(tape), v3=api == "v3", short_ids=api == "classic")
    out = tmp_path / "pulled" / "demo.jsonl"
    with jaeger_server(fake) as url:
        result = pull(url, out, trace_ids=[original.trace_id])
    assert result.api == api and result.runs == 1 and result.steps == 4 and result.traces == 1
    assert fake.requests[0] == f"/api/v3/traces/{original.trace_id}"  # auto asks api/v3 first
    if api == "classic":
        assert fake.requests[1] == f"/api/traces/{original.trace_id}"
    (pulled,) = load_tape(out).runs
    assert _steps(out) == [row for row in _steps(tape) if row[7] in {s.span_id for s in original.steps}]
    assert (pulled.run_id, pulled.trace_id, pulled.span_id, pulled.output) == (
        original.run_id,
        original.trace_id,
        original.span_id,
        original.output,
    )
    exact = api == "v3"  # Jaeger's classic JSON keeps microseconds
    for mine, theirs in zip(pulled.steps, original.steps, strict=True):
        assert mine.start_ns == (theirs.start_ns if exact else theirs.start_ns // 1000 * 1000)
    with replay(out, stub=("write_report",)) as session, agent_run("report-writer"):
        output = run_chain("doc-7", str(report))
    assert output == original.output
    assert session.stats["tape_hits"] == 4 and session.stats["live_tool_calls"] == 0


def test_pull_by_service_and_time_range(tmp_path: Path) -> None:
    tape, _, _ = _recorded(tmp_path)
    runs = load_tape(tape).runs
    fake = FakeJaeger(tape_documents(tape))
    out = tmp_path / "by-service.jsonl"
    with jaeger_server(fake) as url:
        result = pull(url, out, service=_service(tape), since=parse_time("10m"), limit=5)
        assert result.traces == 2 and result.runs == 2 and result.api == "v3"
        query = fake.queries[-1]
        assert query["query.service_name"] == [_service(tape)] and query["query.search_depth"] == ["5"]
        assert query["query.start_time_min"][0].endswith("Z") and len(query["query.start_time_min"][0]) == 30
        assert sorted(r.run_id for r in load_tape(out).runs) == sorted(r.run_id for r in runs)
        with pytest.raises(EndpointError, match="has no spans for service"):
            pull(url, out, service=_service(tape), since=parse_time("3d"), until=parse_time("2d"))
        with pytest.raises(EndpointError, match="has no spans for service 'nobody'"):
            pull(url, out, service="nobody")
        fake.v3 = False
        classic = pull(url, tmp_path / "classic.jsonl", service=_service(tape), limit=1)
    assert classic.api == "classic" and classic.traces == 1
    assert fake.queries[-1]["limit"] == ["1"] and set(fake.queries[-1]) == {"service", "start", "end", "limit"}


def test_secrets_are_redacted_on_the_way_in(tmp_path: Path) -> None:
    tape, _, _ = _recorded(tmp_path)
    assert _TOKEN.encode() in tape.read_bytes()  # recorded without the default rules (see _recorded)
    out = tmp_path / "pulled.jsonl"
    with jaeger_server(FakeJaeger(tape_documents(tape))) as url:
        result = pull(url, out, service=_service(tape))
    data = out.read_bytes()
    assert _TOKEN.encode() not in data and b"k-123456" not in data
    (http_span,) = [s for s in raw_spans(out) if s.name == "POST /search"]
    assert http_span.attrs["http.request.header.authorization"] == "[REDACTED]"  # a secret key: its whole value
    assert orjson.loads(http_span.attrs["app.request"]) == {"api_key": "[REDACTED]", "q": "refund"}
    assert http_span.attrs["app.hosts"][0] == "db.internal" and "[REDACTED" in http_span.attrs["app.hosts"][1]
    assert result.redacted == 3
    assert _steps(out) == _steps(tape)  # recorded steps were redacted already: unchanged, same keys


def test_redact_string_keeps_clean_text_as_it_is() -> None:
    spaced = '{ "b": 1,  "a": [1, 2] }'
    assert redact_string(spaced, DEFAULT_REDACTOR) is spaced
    assert redact_string("{not json", DEFAULT_REDACTOR) == "{not json"
    assert redact_string('{"password": "x"}', DEFAULT_REDACTOR) == '{"password":"[REDACTED]"}'


def test_an_unknown_trace_and_an_unreachable_jaeger_say_where(tmp_path: Path) -> None:
    tape, _, _ = _recorded(tmp_path)
    out = tmp_path / "kept.jsonl"
    out.write_text("previous tape\n")
    with (
        jaeger_server(FakeJaeger(tape_documents(tape))) as url,
        pytest.raises(EndpointError, match=rf"no trace 0+abc \({url}/api/v3/traces/0+abc answered 404"),
    ):
        pull(url, out, trace_ids=["abc"])
    port = closed_port()
    with pytest.raises(EndpointError, match=rf"127\.0\.0\.1:{port}/api/v3/traces/.*[Rr]efused"):
        pull(f"http://127.0.0.1:{port}", out, trace_ids=["abc"])
    assert out.read_text() == "previous tape\n"  # a failed pull leaves the old tape alone
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".pulling")]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({}, "either trace ids or a service"),
        ({"trace_ids": ["ab"], "service": "s"}, "either trace ids or a service"),
        ({"trace_ids": ["xyz"]}, "'xyz' is not hex"),
        ({"service": "s", "limit": 0}, "limit=0"),
        ({"service": "s", "api": "v9"}, "api='v9'"),
    ],
)
def test_bad_options_are_configuration_errors(tmp_path: Path, kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        pull("http://127.0.0.1:1", tmp_path / "x.jsonl", **kwargs)
    with pytest.raises(ConfigurationError, match="is not a URL"):
        pull("localhost:16686", tmp_path / "x.jsonl", service="s")


def test_durations_and_times() -> None:
    assert parse_duration("90s") == _dt.timedelta(seconds=90)
    assert parse_duration("1h30m") == _dt.timedelta(minutes=90)
    assert parse_duration("500ms") == _dt.timedelta(milliseconds=500)
    for bad in ("", "5", "1w", "h1", "1h 2x"):
        with pytest.raises(ConfigurationError, match="is not a duration"):
            parse_duration(bad)
    now = _dt.datetime(2026, 11, 30, 12, 0, tzinfo=_dt.timezone.utc)
    assert parse_time("2h", now) == now - _dt.timedelta(hours=2)
    assert parse_time("2026-11-30T09:00:00Z") == _dt.datetime(2026, 11, 30, 9, tzinfo=_dt.timezone.utc)
    assert parse_time("2026-11-30T09:00:00").tzinfo == _dt.timezone.utc
    with pytest.raises(ConfigurationError, match="neither a time"):
        parse_time("yesterday")


def test_pull_redacts_names_keys_scopes_and_bytes_too(tmp_path: Path) -> None:
    """Span, event and scope names, attribute keys and bytes values: everything pull brings in is redacted."""
    tape = tmp_path / "raw.jsonl"
    tracer = trace.get_tracer(f"scope-{_TOKEN}", f"1.0-{_TOKEN}")
    with (
        record(tape, redactor=Redactor(defaults=False)),
        agent_run("raw", run_id="raw"),
        tracer.start_as_current_span(f"GET /repos?token={_TOKEN}") as span,
    ):
        span.set_attribute(f"app.{_TOKEN}", "a token as a key")
        span.set_attribute("app.raw", f"password: {_TOKEN}".encode())
        span.add_event(f"retrying with {_TOKEN}", {"app.note": "x"})
    assert _TOKEN.encode() in tape.read_bytes()
    out = tmp_path / "pulled.jsonl"
    with jaeger_server(FakeJaeger(tape_documents(tape))) as url:
        pull(url, out, service=_service(tape))
    data = out.read_bytes()
    assert _TOKEN.encode() not in data
    assert data.count(b"[REDACTED") >= 5
