"""push: a tape's spans to real OTLP receivers (HTTP and gRPC) on 127.0.0.1, exactly as recorded."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.jaeger_json import classic_answer, tape_documents, v3_answer
from helpers.otlp_receiver import Received, attrs_of, closed_port, grpc_receiver, http_receiver
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.trace import Link, SpanKind

from otel_agent_replay import OtlpWarning, TapeFormatError, TapeNotFoundError, TapeWarning, agent_run, record, tool
from otel_agent_replay.backends import push
from otel_agent_replay.backends._otlp_json import span_json
from otel_agent_replay.core import ConfigurationError, EndpointError
from otel_agent_replay.core import attributes as A


@tool(side_effect="read_only")
def fetch(url: str) -> dict[str, Any]:
    return {"status": 200, "body": "ok"}


@tool(side_effect="external")
def pay(amount: int) -> None:
    raise RuntimeError("card declined")


def record_rich_tape(path: Path) -> None:
    """A tape with steps, an error with its exception event, a linked client span, typed attributes."""
    with record(path), agent_run("shop", input={"cart": 3}) as run:
        fetch("https://example.test/a")
        with contextlib.suppress(RuntimeError):
            pay(12)
        ctx = run.span.get_span_context()
        tracer = trace.get_tracer("app.http", "2.0")
        with tracer.start_as_current_span(
            "GET /stock",
            kind=SpanKind.CLIENT,
            links=[Link(ctx, {"why": "follows the run"})],
            attributes={"http.status": 200, "ratio": 0.25, "cached": False, "tags": ["a", "b"]},
        ) as span:
            span.add_event("retry", {"attempt": 2})
        run.set_output({"paid": False})


def _tape_spans(path: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Span id → (span, resource, scope) as the tape has them."""
    out = {}
    for doc in tape_documents(path):
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    out[span["spanId"]] = (span, rs.get("resource", {}), ss.get("scope", {}))
    return out


def _received(got: Received) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    from google.protobuf.json_format import MessageToDict

    out = {}
    for req in got.requests:
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    out[span.span_id.hex()] = (span_json(span), MessageToDict(rs.resource), MessageToDict(ss.scope))
    return out


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_push_sends_every_span_exactly_as_recorded(tape: Path, protocol: str) -> None:
    record_rich_tape(tape)
    receiver = http_receiver() if protocol == "http/protobuf" else grpc_receiver()
    with receiver as (url, got):
        result = push(tape, url, protocol=protocol, content=True, headers={"x-tenant": "t1"})
    on_tape, sent = _tape_spans(tape), _received(got)
    assert result.spans == len(on_tape) == 4 and result.requests == 1 and result.rejected == 0
    assert sorted(sent) == sorted(on_tape)
    for span_id, (span, resource, scope) in on_tape.items():
        assert sent[span_id] == (span, resource, scope)  # ids, parent, times, attributes, events, links, status
    linked = next(span for span, _, _ in on_tape.values() if span["name"] == "GET /stock")
    assert linked["links"][0]["attributes"] and linked["events"][0]["name"] == "retry" and linked["kind"] == 3
    failed = next(span for span, _, _ in on_tape.values() if span["name"] == "execute_tool pay")
    assert failed["status"]["code"] == 2 and failed["events"][0]["name"] == A.EXCEPTION_EVENT
    assert got.headers[0]["x-tenant"] == "t1"
    if protocol == "http/protobuf":
        assert got.paths == ["/v1/traces"] and got.headers[0]["content-type"] == "application/x-protobuf"


def test_content_is_left_out_unless_the_switch_or_the_option_says_so(
    tape: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    record_rich_tape(tape)
    with http_receiver() as (url, got):
        result = push(tape, url)
    assert result.content_stripped == 3  # the run span and two steps carry content
    sent = [attrs_of(span) for span in got.spans()]
    assert not any(key in A.CONTENT_ATTRIBUTES for attrs in sent for key in attrs)
    assert sum(A.CALL_KEY in attrs for attrs in sent) == 2  # the rest is there
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with http_receiver() as (url, got):
        assert push(tape, url).content_stripped == 0
    assert any(A.GEN_AI_TOOL_CALL_ARGUMENTS in attrs_of(span) for span in got.spans())


def test_batches_group_spans_by_resource_and_scope(tape: Path) -> None:
    record_rich_tape(tape)
    with http_receiver() as (url, got):
        result = push(tape, url, batch_spans=3, content=True)
    assert result.requests == 2 and [len(r.resource_spans) for r in got.requests] == [1, 1]
    first, second = (r.resource_spans[0].scope_spans for r in got.requests)
    assert [(ss.scope.name, len(ss.spans)) for ss in first] == [("otel_agent_replay", 2), ("app.http", 1)]
    assert [(ss.scope.name, len(ss.spans)) for ss in second] == [("otel_agent_replay", 1)]
    assert sorted(got.by_id()) == sorted(_tape_spans(tape))


@pytest.mark.parametrize("shape", ["jaeger", "jaeger-v3", "collector", "document"])
def test_push_reads_what_the_loader_reads(tape: Path, tmp_path: Path, shape: str) -> None:
    record_rich_tape(tape)
    docs = tape_documents(tape)
    other = tmp_path / f"{shape}.json"
    if shape == "jaeger":
        other.write_bytes(orjson.dumps(classic_answer(docs)))
    elif shape == "jaeger-v3":
        other.write_bytes(orjson.dumps(v3_answer(docs)) + b"\n")
    elif shape == "collector":  # the Collector's file exporter: many spans on one line
        other.write_bytes(orjson.dumps({"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}) + b"\n")
    else:
        other.write_bytes(
            orjson.dumps({"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}, option=orjson.OPT_INDENT_2)
        )
    with http_receiver() as (url, got):
        result = push(other, url, content=True)
    on_tape, sent = _tape_spans(tape), _received(got)
    assert result.spans == 4 and sorted(sent) == sorted(on_tape)
    for span_id, (span, _, _) in on_tape.items():
        got_span = sent[span_id][0]
        assert got_span.get("parentSpanId") == span.get("parentSpanId")
        assert got_span["name"] == span["name"] and got_span.get("status") == span.get("status")
        if shape == "jaeger":  # Jaeger keeps microseconds and writes arrays as JSON strings
            assert int(got_span["startTimeUnixNano"]) == int(span["startTimeUnixNano"]) // 1000 * 1000
            keys = {kv["key"] for kv in span.get("attributes", [])}
            assert {kv["key"] for kv in got_span.get("attributes", [])} == keys
        else:
            assert got_span == span
    assert sent[next(iter(on_tape))][1]["attributes"]  # the resource came along


def test_a_torn_last_line_is_skipped_with_a_warning(tape: Path) -> None:
    record_rich_tape(tape)
    with open(tape, "ab") as f:
        f.write(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab')
    with http_receiver() as (url, got), pytest.warns(TapeWarning, match="unterminated"):
        result = push(tape, url)
    assert result.spans == 4 == len(got.spans())


def test_a_malformed_tape_is_refused_before_anything_is_sent(tape: Path, tmp_path: Path) -> None:
    record_rich_tape(tape)
    lines = tape.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(lines[0] + b'{"resourceSpans": 7}\n' + lines[1])
    with http_receiver() as (url, got):
        with pytest.raises(TapeFormatError, match=rf"{bad}:2: "):
            push(bad, url)
        with pytest.raises(TapeNotFoundError):
            push(tmp_path / "missing.jsonl", url)
    assert got.requests == []


def test_endpoint_failures_say_where_and_what_to_do(tape: Path) -> None:
    record_rich_tape(tape)
    port = closed_port()
    with pytest.raises(EndpointError, match=rf"127\.0\.0\.1:{port}/v1/traces.*[Rr]efused.*backend is running"):
        push(tape, f"http://127.0.0.1:{port}")
    with http_receiver(status=400) as (url, _), pytest.raises(EndpointError, match="answered HTTP 400: no thanks"):
        push(tape, url + "/v1/traces")
    with pytest.raises(EndpointError, match=rf"gRPC export to http://127\.0\.0\.1:{port} failed: UNAVAILABLE"):
        push(tape, f"http://127.0.0.1:{port}", protocol="grpc", timeout=2)


def test_bad_options_are_configuration_errors(tape: Path) -> None:
    record_rich_tape(tape)
    with pytest.raises(ConfigurationError, match="'http/json' is not supported"):
        push(tape, "http://127.0.0.1:1", protocol="http/json")
    with pytest.raises(ConfigurationError, match="is not a URL"):
        push(tape, "127.0.0.1:4318")


def _partial(rejected: int, why: str) -> ExportTraceServiceResponse:
    answer = ExportTraceServiceResponse()
    answer.partial_success.rejected_spans = rejected
    answer.partial_success.error_message = why
    return answer


def test_cli_push_reports_a_receivers_partial_success(tape: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from google.protobuf.json_format import MessageToJson

    from otel_agent_replay.cli import main

    record_rich_tape(tape)
    partial = _partial(3, "3 spans are older than the retention")
    with http_receiver(answer=partial.SerializeToString()) as (url, got):
        assert main(["push", str(tape), "--endpoint", url]) == 0
    captured = capsys.readouterr()
    assert len(got.spans()) == 4 and "pushed 4 span(s)" in captured.out
    assert "the endpoint rejected 3 span(s): 3 spans are older than the retention" in " ".join(captured.err.split())
    with http_receiver(answer=MessageToJson(partial).encode(), content_type="application/json") as (url, _):
        assert main(["push", str(tape), "--endpoint", url, "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert (report["rejected"], report["unconfirmed"]) == (3, 0)


@pytest.mark.parametrize(
    ("body", "kind", "why"),
    [
        (b"\xff\xfe not protobuf", "application/x-protobuf", "application/x-protobuf body that is not an OTLP answer"),
        (b"<html>ok</html>", "text/html", "answered with text/html, not an OTLP answer"),
    ],
)
def test_an_answer_push_cannot_read_is_warned_and_counted(tape: Path, body: bytes, kind: str, why: str) -> None:
    record_rich_tape(tape)
    with (
        http_receiver(answer=body, content_type=kind) as (url, got),
        pytest.warns(OtlpWarning, match=rf"push: 4 of 4 span\(s\) sent to {url}/v1/traces are not confirmed") as seen,
    ):
        result = push(tape, url)
    assert len(got.spans()) == 4 and (result.rejected, result.unconfirmed) == (0, 4)
    assert len(seen) == 1 and why in str(seen[0].message)
    assert any(why in m for m in result.messages)
