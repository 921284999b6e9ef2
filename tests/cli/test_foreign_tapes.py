"""Issue 30: a tape another tool wrote goes through the detector capture uses, in every command that reads it.

The foreign tape is written here by the OpenTelemetry SDK itself (a ``TracerProvider`` of its own,
spans encoded by the OpenTelemetry project's OTLP JSON encoder, one span a line), with every sample of
the secret corpora (``helpers.secrets``, ``helpers.secret_corpus``) in each place a span can carry a
value: the span name, a plain attribute, an attribute under a secret key, JSON arguments and results,
GenAI messages, an event's attribute, a link's attribute, the status message, the resource, and a
recorded HTTP stream whose deltas split the secret. None reaches ``show`` (tree, ``--full``,
``--conversation``, ``--json``), ``ingest`` and the store and ``report``, ``diff --html`` or what
``push`` sends; ``check`` flags every place of every sample, and the same spans recorded inside a run
(where capture redacts the application's own spans) hold none and leave ``check`` nothing to flag.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.otlp_receiver import http_receiver
from helpers.secret_corpus import ALL_SAMPLES, Sample
from helpers.secrets import json_forms
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from otel_agent_replay import agent_run, load_tape, record
from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.capture._layers import LAYER_NAMES
from otel_agent_replay.capture._redact_rules import PATTERN_NAMES
from otel_agent_replay.cli import main
from otel_agent_replay.cli._check import check_tapes
from otel_agent_replay.core import attributes as A

SAMPLES = ALL_SAMPLES
RESOURCE_SAMPLE = SAMPLES[0]


def _leaks(data: bytes, samples: list[Sample] = SAMPLES) -> list[str]:
    return [
        sample.name
        for sample in samples
        if any(form in data for secret in sample.forms() for form in json_forms(secret))
    ]


def _stream_result(text: str) -> dict[str, Any]:
    """A recorded HTTP stream (``integrations._wire``'s shape) of ``text`` in 4-character deltas."""
    events = []
    for at in range(0, len(text), 4):
        chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text[at : at + 4]}}]}
        events.append({"offset": 0.001, "text": f"data: {json.dumps(chunk)}\n\n"})
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "events": events}


PLACES: dict[str, str] = {
    "name": "the span name",
    "note": "attribute app.note",
    "secret_key": "attribute app.password",
    "arguments": f"attribute {A.GEN_AI_TOOL_CALL_ARGUMENTS}",
    "result": f"attribute {A.GEN_AI_TOOL_CALL_RESULT}",
    "output_messages": f"attribute {A.GEN_AI_OUTPUT_MESSAGES}",
    "stream": f"attribute {A.MODEL_RESULT}",
    "event": "attribute detail of event 'log'",
    "link": "attribute note of a link",
    "status": "the error message",
}
"""Each place a sample goes in a span, and how ``check`` names it."""


def _emit(tracer: trace.Tracer, sample: Sample, linked: trace.SpanContext | None) -> None:
    """One tool span of another tool's instrumentation, with ``sample`` in every place of ``PLACES``."""
    said = [{"role": "assistant", "parts": [{"type": "text", "content": sample.text}]}]
    attrs = {
        A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
        A.GEN_AI_TOOL_NAME: "read_file",
        "app.note": sample.text,
        "app.password": sample.secret,
        A.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"path": "/etc/app.conf", "content": sample.text}),
        A.GEN_AI_TOOL_CALL_RESULT: json.dumps({"content": sample.text}),
        A.GEN_AI_OUTPUT_MESSAGES: json.dumps(said),
        A.MODEL_RESULT: json.dumps(_stream_result(sample.text)),
    }
    links = [Link(linked, {"note": sample.text})] if linked is not None else []
    with tracer.start_as_current_span(f"execute_tool {sample.text}", attributes=attrs, links=links) as span:
        span.add_event("log", {"detail": sample.text})
        span.set_status(Status(StatusCode.ERROR, sample.text))


def _agent(tracer: trace.Tracer, samples: list[Sample] = SAMPLES) -> None:
    with tracer.start_as_current_span("invoke_agent other-tool", attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        linked = trace.get_current_span().get_span_context()
        for sample in samples:
            _emit(tracer, sample, linked)


def _foreign_spans(samples: list[Sample] = SAMPLES) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "other-tool", "deploy.note": RESOURCE_SAMPLE.text})
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _agent(provider.get_tracer("another.instrumentation"), samples)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _write(path: Path, spans: list[ReadableSpan]) -> Path:
    """One span a line, in OTLP JSON, by the OpenTelemetry project's own encoder (not this project's)."""
    lines = [orjson.dumps(encode_spans([span]).to_dict()) + b"\n" for span in spans]
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = _write(tmp_path_factory.mktemp("foreign") / "other.jsonl", _foreign_spans())
    assert len(_leaks(path.read_bytes())) == len(SAMPLES)  # another tool's tape: every secret in it
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, bytes]:
    capsys.readouterr()
    code = main(argv)
    printed = capsys.readouterr()
    return code, (printed.out + printed.err).encode()


def _store_bytes(db: Path) -> bytes:
    out: list[bytes] = []
    with sqlite3.connect(db) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                out.extend(cell if isinstance(cell, bytes) else str(cell).encode("utf-8") for cell in row)
    return b"\n".join(out)


def test_show_prints_no_secret_of_a_foreign_tape(foreign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load_tape(foreign).runs  # the other tool's spans are read as a run of steps
    for flags in ([], ["--full"], ["--conversation", "--full"], ["--json"]):
        code, shown = _run(["show", str(foreign), *flags], capsys)
        assert code == 0 and b"read_file" in shown, flags
        assert _leaks(shown) == [], flags


def test_ingest_and_report_keep_no_secret_of_a_foreign_tape(
    foreign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    code, said = _run(["ingest", str(foreign), "--db", str(db)], capsys)
    assert code == 0 and _leaks(said) == []
    stored = _store_bytes(db)
    assert b"read_file" in stored and _leaks(stored) == []
    for fmt in ("md", "json"):
        code, report = _run(["report", "--db", str(db), "--format", fmt], capsys)
        assert code == 0 and _leaks(report) == [], fmt


def test_diff_html_shows_no_secret_of_a_foreign_tape(
    foreign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _write(tmp_path / "fewer.jsonl", _foreign_spans(SAMPLES[: len(SAMPLES) // 2]))
    page = tmp_path / "diff.html"
    code, printed = _run(["diff", str(foreign), str(other), "--html", str(page)], capsys)
    assert code == 1 and _leaks(printed) == []  # they diverge, and the page shows both sides
    html = page.read_bytes()
    assert b"read_file" in html and _leaks(html) == []


def test_push_sends_no_secret_of_a_foreign_tape(foreign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with http_receiver() as (endpoint, got):
        code, said = _run(["push", str(foreign), "--endpoint", endpoint, "--content"], capsys)
    assert code == 0 and b"redacted" in said and _leaks(said) == []
    assert len(got.spans()) == 1 + len(SAMPLES)
    sent = b"".join(request.SerializeToString() for request in got.requests)
    assert b"deploy.note" in sent and _leaks(sent) == []


def _places_flagged(path: Path) -> dict[int, set[str]]:
    flagged: dict[int, set[str]] = {}
    for finding in check_tapes([str(path)]):
        if finding.kind != "secret":
            continue
        line = int(finding.where.rsplit(":", 1)[1])
        flagged.setdefault(line, set()).update(k for k, label in PLACES.items() if f"{label} holds" in finding.message)
    return flagged


def test_check_flags_every_place_of_every_sample_and_capture_removes_the_same(
    foreign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flagged = _places_flagged(foreign)
    # a tool span ends before the next one starts: line n holds sample n, the run span comes last
    missed = {s.name: set(PLACES) - flagged.get(n, set()) for n, s in enumerate(SAMPLES, start=1)}
    assert {name: places for name, places in missed.items() if places} == {}
    assert len(flagged) >= len(SAMPLES)
    code, report = _run(["check", str(foreign)], capsys)
    assert code != 0 and _leaks(report) == []  # kind and place, never the value
    # the same spans made inside a recorded run: capture redacts what check flagged, and check finds no more
    recorded = tmp_path / "recorded.jsonl"
    with record(recorded), agent_run("a"):
        _agent(trace.get_tracer("another.instrumentation"))
    assert _leaks(recorded.read_bytes()) == []
    assert [f for f in check_tapes([str(recorded)]) if f.kind == "secret"] == []


def test_check_names_the_kind_of_a_secret_split_across_a_streams_events(tmp_path: Path) -> None:
    (sample,) = [s for s in SAMPLES if s.name == "issue9_2_github_token"]
    result = _stream_result(sample.text)
    assert all(sample.secret not in event["text"] for event in result["events"])  # in no event whole
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("x").start_as_current_span("chat", attributes={A.MODEL_RESULT: json.dumps(result)}):
        pass
    tape = _write(tmp_path / "stream.jsonl", list(exporter.get_finished_spans()))
    (finding,) = [f for f in check_tapes([str(tape)]) if f.kind == "secret"]
    assert f"attribute {A.MODEL_RESULT} holds a secret" in finding.message
    assert "(secret)" not in finding.message  # the kind the assembled text held is named


def _one_span(path: Path, attrs: dict[str, Any]) -> Path:
    """A foreign tape of one tool span carrying ``attrs``, written unredacted by the OpenTelemetry SDK."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("another.instrumentation").start_as_current_span(
        "execute_tool read_file", attributes=attrs
    ):
        pass
    provider.shutdown()
    return _write(path, list(exporter.get_finished_spans()))


def _kinds_named(message: str) -> set[str]:
    named = re.search(r"holds a secret \(([^)]*)\)", message)
    assert named is not None, message
    return set(named.group(1).split(", "))


def test_check_flags_every_kind_of_secret_capture_redacts_and_names_that_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_kind: dict[str, Sample] = {}
    for sample in SAMPLES:
        for kind in DEFAULT_REDACTOR.secret_kinds(sample.text):
            by_kind.setdefault(kind, sample)
    # the corpus holds every kind the rule set names: each value pattern and each layer
    assert set(PATTERN_NAMES) | set(LAYER_NAMES) <= set(by_kind), set(PATTERN_NAMES) - set(by_kind)
    tapes: dict[str, Path] = {}
    for kind, sample in sorted(by_kind.items()):
        attrs = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: "read_file",
            A.GEN_AI_TOOL_CALL_RESULT: json.dumps({"content": sample.text}),
        }
        tapes[kind] = _one_span(tmp_path / f"{kind}.jsonl", attrs)
        assert _leaks(tapes[kind].read_bytes(), [sample]) == [sample.name]  # on the tape as another tool wrote it
    secret = SAMPLES[-1].secret
    tapes["secret_key"] = _one_span(tmp_path / "secret_key.jsonl", {A.GEN_AI_TOOL_NAME: "t", "app.password": secret})
    for kind, tape in tapes.items():
        findings = [f for f in check_tapes([str(tape)]) if f.kind == "secret"]
        assert findings, f"check misses {kind}"
        if kind != "secret_key":  # a value under a secret key is flagged by its key, whatever it holds
            assert kind in set().union(*(_kinds_named(f.message) for f in findings)), (kind, findings)
    code, report = _run(["check", *map(str, tapes.values())], capsys)
    assert code != 0 and report.count(b"holds a secret") >= len(tapes)
    assert _leaks(report) == [] and secret.encode() not in report
