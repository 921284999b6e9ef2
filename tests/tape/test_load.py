"""The tape loader: every supported format, strictness with file:line, foreign GenAI spans.

Spans come from the real OpenTelemetry SDK and are encoded by opentelemetry-exporter-otlp-json-common,
then written to real files in each format the loader reads.
"""

from __future__ import annotations

import base64
import copy
import gc
import json
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from otel_agent_replay.capture._canonical import call_key
from otel_agent_replay.core import SideEffect, StepKind, TapeFormatError, TapeNotFoundError, TapeWarning
from otel_agent_replay.core import attributes as A
from otel_agent_replay.core.attributes import (
    JAEGER_ERROR,
    JAEGER_EVENT_NAME,
    JAEGER_SPAN_KIND,
    JAEGER_STATUS_CODE,
    JAEGER_STATUS_DESCRIPTION,
    JAEGER_STATUS_ERROR,
)
from otel_agent_replay.tape import StepError, Tape, iter_spans, load_tape
from otel_agent_replay.tape import _read as tape_module

T0 = 1_760_000_000_000_000_000  # ns; every time below is a whole microsecond, as Jaeger keeps them


# --- spans from the real SDK ----------------------------------------------------------------


@dataclass
class Recording:
    """The spans of one scenario and the facts the tests check against."""

    spans: list[ReadableSpan]
    ids: dict[str, str] = field(default_factory=dict)
    """Hex ids by label: trace_a, trace_b, ..., and span labels."""


class _Sdk:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "support-agent"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(A.INSTRUMENTATION_NAME, "0.1.0")
        self.clock = T0

    def tick(self) -> int:
        self.clock += 7_000
        return self.clock

    @contextmanager
    def span(
        self,
        name: str,
        attributes: dict[str, Any] | None = None,
        *,
        parent: Span | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        exception: BaseException | None = None,
        status_error: str | None = None,
    ) -> Iterator[Span]:
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(
            name, context=context, kind=kind, attributes=attributes or {}, start_time=self.tick()
        )
        yield span
        if exception is not None:
            span.record_exception(exception, timestamp=self.tick())
            span.set_status(Status(StatusCode.ERROR, str(exception)))
        elif status_error is not None:
            span.set_status(Status(StatusCode.ERROR, status_error))
        span.end(end_time=self.tick())

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


def _run_attrs(run_id: str, agent: str) -> dict[str, Any]:
    return {
        A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
        A.GEN_AI_AGENT_NAME: agent,
        A.RUN_ID: run_id,
        A.AGENT_VERSION: "1.4",
        A.TASK: "refund order 17",
        A.INPUT: '{"order":17}',
        A.OUTPUT: '"refunded"',
        A.MODE: A.MODE_RECORD,
        A.RECORDED_AT: "2025-10-09T10:00:00Z",
        A.SCHEMA_VERSION_ATTR: A.SCHEMA_VERSION,
    }


def _tool_attrs(run_id: str, tool: str, seq: int, args: Any, result: Any, *, parent_step: str = "") -> dict[str, Any]:
    args_json = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    return {
        A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
        A.GEN_AI_TOOL_NAME: tool,
        A.GEN_AI_TOOL_CALL_ID: f"call_{seq}",
        A.GEN_AI_TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
        A.GEN_AI_TOOL_CALL_ARGUMENTS: args_json,
        A.GEN_AI_TOOL_CALL_RESULT: orjson.dumps(result).decode(),
        A.RUN_ID: run_id,
        A.STEP_ID: f"{tool}#{seq}",
        A.PARENT_STEP_ID: parent_step,
        A.SEQ: seq,
        A.KIND: StepKind.TOOL,
        A.CALL_KEY: call_key(tool, args),
        A.TOOL_VERSION: "2",
        A.SIDE_EFFECT: SideEffect.READ_ONLY,
        A.RESULT_SHA256: "ab" * 32,
        A.RESULT_TRUNCATED: False,
        A.SCHEMA_VERSION_ATTR: A.SCHEMA_VERSION,
    }


def _llm_attrs(run_id: str, seq: int) -> dict[str, Any]:
    args = {"messages": [{"role": "user", "content": "refund order 17"}]}
    return {
        A.GEN_AI_OPERATION_NAME: A.OP_CHAT,
        A.GEN_AI_PROVIDER_NAME: "openai",
        A.GEN_AI_REQUEST_MODEL: "gpt-4o",
        A.GEN_AI_USAGE_INPUT_TOKENS: 120,
        A.GEN_AI_USAGE_OUTPUT_TOKENS: 40,
        A.FUNCTION: "plan",
        A.MODEL_ARGUMENTS: orjson.dumps(args).decode(),
        A.MODEL_RESULT: '{"tool_calls":[{"name":"search"}]}',
        A.RUN_ID: run_id,
        A.STEP_ID: f"plan#{seq}",
        A.PARENT_STEP_ID: "",
        A.SEQ: seq,
        A.KIND: StepKind.LLM,
        A.CALL_KEY: call_key("plan", args),
        A.SCHEMA_VERSION_ATTR: A.SCHEMA_VERSION,
    }


FLIGHT_ARGS_1 = '{"to": " LIS ", "from": "BER", "note": null, "price": 1.23456789}'
FLIGHT_ARGS_2 = '{"from":"BER","to":"OPO"}'
WEATHER_ARGS = "Lisbon tomorrow"  # a foreign writer's plain-text arguments


def record_scenario() -> Recording:
    """Four traces: two recorded runs (a task and its retry), a foreign GenAI run, foreign steps
    without any run span, and a run whose run span never reached the tape."""
    sdk = _Sdk()
    ids: dict[str, str] = {}
    # Trace A: a user's HTTP span around two runs of one task.
    with sdk.span("POST /tickets", {"http.request.method": "POST"}, kind=SpanKind.SERVER) as http:
        for run_id in ("run-1", "run-2"):
            with sdk.span(A.run_span_name("support"), _run_attrs(run_id, "support"), parent=http) as run:
                ids[run_id] = f"{run.get_span_context().span_id:016x}"
                with sdk.span(A.model_span_name("gpt-4o"), _llm_attrs(run_id, 1), parent=run):
                    pass
                search = _tool_attrs(run_id, "search", 2, {"customer_id": "c_17", "limit": 20}, {"n": 1})
                search[A.PARENT_STEP_ID] = "plan#1"
                # Inside the tool, a user's HTTP span: not a step, and it must not disturb loading.
                with (
                    sdk.span(A.tool_span_name("search"), search, parent=run) as tool_span,
                    sdk.span("GET /customers", {"http.response.status_code": 200}, parent=tool_span),
                ):
                    pass
                if run_id == "run-1":
                    mail = _tool_attrs(run_id, "send_mail", 3, {"to": "a@example.com"}, None)
                    del mail[A.GEN_AI_TOOL_CALL_RESULT]
                    mail[A.SIDE_EFFECT] = SideEffect.EXTERNAL
                    with sdk.span(A.tool_span_name("send_mail"), mail, parent=run, exception=ValueError("smtp down")):
                        pass
            ids["trace_a"] = f"{run.get_span_context().trace_id:032x}"
    # Trace B: a foreign GenAI run (no agent_replay.* anywhere), steps below a framework span.
    foreign_run = {A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: "travel"}
    with sdk.span(A.run_span_name("travel"), foreign_run) as run:
        ids["foreign_run"] = f"{run.get_span_context().span_id:016x}"
        ids["trace_b"] = f"{run.get_span_context().trace_id:032x}"
        with sdk.span("agent loop", {}, parent=run) as loop:
            for args in (FLIGHT_ARGS_1, FLIGHT_ARGS_2):
                attrs = {
                    A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
                    A.GEN_AI_TOOL_NAME: "lookup_flight",
                    A.GEN_AI_TOOL_CALL_ARGUMENTS: args,
                    A.GEN_AI_TOOL_CALL_RESULT: '{"flights":2}',
                }
                with sdk.span(A.tool_span_name("lookup_flight"), attrs, parent=loop):
                    pass
        weather = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: "weather",
            A.GEN_AI_TOOL_CALL_ARGUMENTS: WEATHER_ARGS,
        }
        with sdk.span(A.tool_span_name("weather"), weather, parent=run, status_error="quota exceeded"):
            pass
    # Trace C: foreign steps with no run span at all.
    with sdk.span("cron job", {}) as job:
        ids["trace_c"] = f"{job.get_span_context().trace_id:032x}"
        for city in ("Porto", "Faro"):
            attrs = {
                A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.GEN_AI_TOOL_NAME: "geocode",
                A.GEN_AI_TOOL_CALL_ARGUMENTS: orjson.dumps({"city": city}).decode(),
            }
            with sdk.span(A.tool_span_name("geocode"), attrs, parent=job):
                pass
    # Trace D: the process died mid-run; its run span is dropped below.
    with sdk.span(A.run_span_name("support"), _run_attrs("run-4", "support")) as lost:
        ids["lost_run"] = f"{lost.get_span_context().span_id:016x}"
        ids["trace_d"] = f"{lost.get_span_context().trace_id:032x}"
        for seq, tool in ((1, "search"), (2, "lookup")):
            with sdk.span(A.tool_span_name(tool), _tool_attrs("run-4", tool, seq, {"q": tool}, [1]), parent=lost):
                pass
    spans = [s for s in sdk.finished() if s.context.span_id != lost.get_span_context().span_id]
    return Recording(spans=spans, ids=ids)


@pytest.fixture(scope="module")
def scenario() -> Recording:
    return record_scenario()


# --- writing each format --------------------------------------------------------------------


def otlp_dict(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    result: dict[str, Any] = encode_spans(spans).to_dict()
    return result


def write_one_span_per_line(path: Path, spans: Sequence[ReadableSpan]) -> Path:
    """Our tape format: one TracesData per line, one span each, written with orjson."""
    path.write_bytes(b"".join(orjson.dumps(otlp_dict([s])) + b"\n" for s in spans))
    return path


def write_many_spans_per_line(path: Path, spans: Sequence[ReadableSpan], per_line: int = 3) -> Path:
    """The Collector file exporter's shape: several spans per line (written by another JSON writer)."""
    lines = [
        json.dumps(otlp_dict(spans[i : i + per_line]), separators=(",", ":")) + "\n"
        for i in range(0, len(spans), per_line)
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def write_document(path: Path, spans: Sequence[ReadableSpan]) -> Path:
    """One pretty-printed OTLP JSON document (ExportTraceServiceRequest)."""
    path.write_text(json.dumps(otlp_dict(spans), indent=2), encoding="utf-8")
    return path


def _jaeger_tag(kv: dict[str, Any]) -> dict[str, Any]:
    value = kv["value"]
    if "stringValue" in value:
        return {"key": kv["key"], "type": "string", "value": value["stringValue"]}
    if "intValue" in value:
        return {"key": kv["key"], "type": "int64", "value": int(value["intValue"])}
    if "boolValue" in value:
        return {"key": kv["key"], "type": "bool", "value": value["boolValue"]}
    if "doubleValue" in value:
        return {"key": kv["key"], "type": "float64", "value": value["doubleValue"]}
    return {"key": kv["key"], "type": "string", "value": json.dumps(value)}


_KIND_NAMES = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def to_jaeger(otlp: dict[str, Any]) -> dict[str, Any]:
    """Jaeger's JSON (UI download, /api/traces/{id}) for the same spans, as Jaeger translates OTLP."""
    traces: dict[str, dict[str, Any]] = {}
    for rs in otlp["resourceSpans"]:
        resource_tags = [_jaeger_tag(kv) for kv in rs["resource"]["attributes"]]
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                trace_id = sp["traceId"]
                entry = traces.setdefault(
                    trace_id,
                    {
                        "traceID": trace_id,
                        "spans": [],
                        "processes": {"p1": {"serviceName": "support-agent", "tags": resource_tags}},
                        "warnings": None,
                    },
                )
                tags = [_jaeger_tag(kv) for kv in sp.get("attributes", [])]
                tags.append({"key": JAEGER_SPAN_KIND, "type": "string", "value": _KIND_NAMES[sp["kind"]]})
                status = sp.get("status") or {}
                if status.get("code") == 2:
                    tags.append({"key": JAEGER_STATUS_CODE, "type": "string", "value": JAEGER_STATUS_ERROR})
                    tags.append({"key": JAEGER_ERROR, "type": "bool", "value": True})
                    if status.get("message"):
                        tags.append({"key": JAEGER_STATUS_DESCRIPTION, "type": "string", "value": status["message"]})
                logs = [
                    {
                        "timestamp": int(event["timeUnixNano"]) // 1000,
                        "fields": [
                            {"key": JAEGER_EVENT_NAME, "type": "string", "value": event["name"]},
                            *(_jaeger_tag(kv) for kv in event.get("attributes", [])),
                        ],
                    }
                    for event in sp.get("events", [])
                ]
                references = []
                if sp.get("parentSpanId"):
                    references.append({"refType": "CHILD_OF", "traceID": trace_id, "spanID": sp["parentSpanId"]})
                start = int(sp["startTimeUnixNano"])
                entry["spans"].append(
                    {
                        "traceID": trace_id,
                        "spanID": sp["spanId"],
                        "operationName": sp["name"],
                        "references": references,
                        "startTime": start // 1000,
                        "duration": (int(sp["endTimeUnixNano"]) - start) // 1000,
                        "tags": tags,
                        "logs": logs,
                        "processID": "p1",
                        "warnings": None,
                        "flags": 1,
                    }
                )
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}


def write_jaeger(path: Path, spans: Sequence[ReadableSpan]) -> Path:
    path.write_text(json.dumps(to_jaeger(otlp_dict(spans)), indent=2), encoding="utf-8")
    return path


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode("ascii")


def to_v3(otlp: dict[str, Any]) -> dict[str, Any]:
    """Jaeger /api/v3 answer: protobuf JSON, so base64 ids and enum names."""
    doc = copy.deepcopy(otlp)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for field_name in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(field_name):
                        sp[field_name] = _b64(sp[field_name])
                sp["kind"] = f"SPAN_KIND_{_KIND_NAMES[sp['kind']].upper()}"
                if (sp.get("status") or {}).get("code") == 2:
                    sp["status"]["code"] = "STATUS_CODE_ERROR"
    return {"result": doc}


def write_v3(path: Path, spans: Sequence[ReadableSpan]) -> Path:
    path.write_text(json.dumps(to_v3(otlp_dict(spans)), indent=1), encoding="utf-8")
    return path


WRITERS = {
    "one span per line": write_one_span_per_line,
    "many spans per line": write_many_spans_per_line,
    "one OTLP document": write_document,
    "jaeger": write_jaeger,
    "jaeger api/v3": write_v3,
}


@pytest.fixture
def tape_path(tmp_path: Path, scenario: Recording) -> Path:
    return write_one_span_per_line(tmp_path / "tape.jsonl", scenario.spans)


def good_line(attributes: dict[str, Any] | None = None) -> bytes:
    """One valid tape line holding one recorded tool step (run_id ``run-x``)."""
    sdk = _Sdk()
    attrs = attributes if attributes is not None else _tool_attrs("run-x", "search", 1, {"q": 1}, 2)
    with sdk.span(A.tool_span_name("search"), attrs):
        pass
    return orjson.dumps(otlp_dict(sdk.finished())) + b"\n"


def at(path: Path, line: int) -> str:
    """The start of an error message about ``path`` line ``line``."""
    return "^" + re.escape(f"{path}:{line}: ")


# --- formats ----------------------------------------------------------------------------------


def test_recorded_runs_and_steps_load(tape_path: Path, scenario: Recording) -> None:
    tape = load_tape(tape_path)
    assert isinstance(tape, Tape)
    assert tape.path == str(tape_path)
    assert tape.warnings == ()
    run1 = tape.run("run-1")
    assert run1.complete
    assert run1.agent_name == "support"
    assert run1.agent_version == "1.4"
    assert run1.task == "refund order 17"
    assert run1.input == {"order": 17}
    assert run1.output == "refunded"
    assert run1.mode == A.MODE_RECORD
    assert run1.recorded_at == "2025-10-09T10:00:00Z"
    assert run1.span_id == scenario.ids["run-1"]
    assert run1.trace_id == scenario.ids["trace_a"]
    assert run1.error is None
    assert [s.step_id for s in run1.steps] == ["plan#1", "search#2", "send_mail#3"]
    assert [s.seq for s in run1.steps] == [1, 2, 3]
    plan, search, mail = run1.steps
    assert plan.kind == StepKind.LLM
    assert plan.tool == "plan"
    assert plan.model == "gpt-4o"
    assert plan.provider == "openai"
    assert (plan.input_tokens, plan.output_tokens) == (120, 40)
    assert plan.args == {"messages": [{"role": "user", "content": "refund order 17"}]}
    assert plan.result == {"tool_calls": [{"name": "search"}]}
    assert search.kind == StepKind.TOOL
    assert search.args == {"customer_id": "c_17", "limit": 20}
    assert search.result == {"n": 1}
    assert search.call_key == call_key("search", {"customer_id": "c_17", "limit": 20})
    assert search.parent_step_id == "plan#1"
    assert search.parent_span_id == run1.span_id
    assert search.side_effect == SideEffect.READ_ONLY
    assert search.tool_version == "2"
    assert search.result_sha256 == "ab" * 32
    assert search.result_truncated is False
    assert search.error is None
    assert search.run_id == "run-1"
    assert search.end_ns > search.start_ns >= T0
    assert search.attributes[A.SEQ] == 2  # intValue decoded to int
    assert search.attributes[A.RESULT_TRUNCATED] is False
    assert mail.error == StepError("ValueError", "smtp down")
    assert mail.result_json is None
    assert mail.side_effect == SideEffect.EXTERNAL


def test_runs_come_in_order_of_first_appearance(tape_path: Path, scenario: Recording) -> None:
    tape = load_tape(tape_path)
    ids = scenario.ids
    assert [r.run_id for r in tape.runs] == ["run-1", "run-2", ids["foreign_run"], ids["trace_c"], "run-4"]
    assert len(tape) == 5
    assert list(tape) == list(tape.runs)


def test_run_lookup_and_runs_of_trace(tape_path: Path, scenario: Recording) -> None:
    tape = load_tape(tape_path)
    assert [r.run_id for r in tape.runs_of_trace(scenario.ids["trace_a"])] == ["run-1", "run-2"]
    assert tape.runs_of_trace("0" * 32) == ()
    with pytest.raises(KeyError, match="run-1"):
        tape.run("no-such-run")


@pytest.mark.parametrize("fmt", [f for f in WRITERS if f != "one span per line"])
def test_every_format_loads_the_same_runs_and_steps(tmp_path: Path, scenario: Recording, fmt: str) -> None:
    reference = load_tape(write_one_span_per_line(tmp_path / "reference.jsonl", scenario.spans))
    path = WRITERS[fmt](tmp_path / "other.json", scenario.spans)
    tape = load_tape(path)
    assert tape.runs == reference.runs
    for run, ref_run in zip(tape.runs, reference.runs, strict=True):
        assert dict(run.attributes) == dict(ref_run.attributes)
        for step, ref_step in zip(run.steps, ref_run.steps, strict=True):
            assert dict(step.attributes) == dict(ref_step.attributes)


def test_a_document_is_read_whole_not_as_lines(tmp_path: Path, scenario: Recording) -> None:
    path = write_document(tmp_path / "doc.json", scenario.spans)
    assert path.read_text().count("\n") > 100
    assert len(load_tape(path).runs) == 5


def test_jaeger_ids_without_leading_zeros_are_padded(tmp_path: Path, scenario: Recording) -> None:
    doc = to_jaeger(otlp_dict(scenario.spans[:1]))
    span = doc["data"][0]["spans"][0]
    span["traceID"] = "00000000000000000000000000abc123".lstrip("0")
    span["spanID"] = "00000000000def45".lstrip("0")
    span["references"] = []
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(doc))
    [record] = list(iter_spans(path))
    assert record.trace_id == "00000000000000000000000000abc123"
    assert record.span_id == "00000000000def45"
    assert record.parent_span_id == ""


def test_iter_spans_yields_every_span_in_file_order(tape_path: Path, scenario: Recording) -> None:
    records = list(iter_spans(tape_path))
    assert [r.span_id for r in records] == [f"{s.context.span_id:016x}" for s in scenario.spans]
    http = records[[r.name for r in records].index("GET /customers")]
    assert http.attributes == {"http.response.status_code": 200}
    assert [r.line for r in records] == list(range(1, len(records) + 1))


# --- foreign GenAI spans ------------------------------------------------------------------


def test_foreign_steps_get_loader_computed_call_keys(tape_path: Path, scenario: Recording) -> None:
    run = load_tape(tape_path).run(scenario.ids["foreign_run"])
    assert run.complete
    assert run.agent_name == "travel"
    assert run.span_id == scenario.ids["foreign_run"]
    assert run.trace_id == scenario.ids["trace_b"]
    assert [s.tool for s in run.steps] == ["lookup_flight", "lookup_flight", "weather"]
    assert [s.seq for s in run.steps] == [1, 2, 3]
    assert [s.step_id for s in run.steps] == ["lookup_flight#1", "lookup_flight#2", "weather#1"]
    assert [s.parent_step_id for s in run.steps] == ["", "", ""]
    first, second, weather = run.steps
    assert first.args_json == FLIGHT_ARGS_1  # kept as recorded
    assert first.call_key == call_key(
        "lookup_flight", {"to": " LIS ", "from": "BER", "note": None, "price": 1.23456789}
    )
    assert first.call_key == call_key("lookup_flight", {"from": "BER", "to": "LIS", "price": 1.234568})
    assert second.call_key == call_key("lookup_flight", {"from": "BER", "to": "OPO"})
    assert weather.call_key == call_key("weather", WEATHER_ARGS)
    assert weather.args == WEATHER_ARGS
    assert weather.error == StepError("", "quota exceeded")  # status ERROR without an exception event
    assert first.side_effect is None
    assert first.run_id == run.run_id


def test_foreign_steps_without_a_run_span_form_a_run_per_trace(tape_path: Path, scenario: Recording) -> None:
    tape = load_tape(tape_path)
    run = tape.run(scenario.ids["trace_c"])
    assert run.complete is False
    assert run.agent_name == ""
    assert run.trace_id == scenario.ids["trace_c"]
    assert [s.step_id for s in run.steps] == ["geocode#1", "geocode#2"]
    assert [s.args for s in run.steps] == [{"city": "Porto"}, {"city": "Faro"}]


def test_steps_whose_run_span_is_missing_load_as_an_incomplete_run(tape_path: Path, scenario: Recording) -> None:
    run = load_tape(tape_path).run("run-4")
    assert run.complete is False
    assert run.trace_id == scenario.ids["trace_d"]
    assert run.span_id == scenario.ids["lost_run"]  # the parent of its steps
    assert [s.step_id for s in run.steps] == ["search#1", "lookup#2"]
    assert run.start_ns == run.steps[0].start_ns


def test_a_tool_span_without_arguments_is_skipped_with_a_warning(tmp_path: Path) -> None:
    attrs = {A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "search"}
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line() + good_line(attrs))
    with pytest.warns(TapeWarning, match="without recorded arguments"):
        tape = load_tape(path)
    assert len(tape.warnings) == 1
    assert [len(r.steps) for r in tape.runs] == [1]


# --- strictness -----------------------------------------------------------------------------


def _corrupt(span_edit: Any) -> bytes:
    doc = orjson.loads(good_line())
    span_edit(doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0])
    return orjson.dumps(doc) + b"\n"


def _without(key: str) -> Any:
    return lambda span: span.pop(key)


def _set(key: str, value: Any) -> Any:
    return lambda span: span.__setitem__(key, value)


MALFORMED_LINES = {
    "invalid JSON": (b'{"resourceSpans": [\n', r"invalid JSON \("),
    "not an object": (b"[1, 2]\n", r"expected a JSON object .* found an array"),
    "missing resourceSpans": (
        b'{"scopeSpans": []}\n',
        r'not an OTLP TracesData object: no "resourceSpans" \(keys found: \'scopeSpans\'\)',
    ),
    "no traceId": (_corrupt(_without("traceId")), r"has no traceId"),
    "no spanId": (_corrupt(_without("spanId")), r"has no spanId"),
    "bad hex id": (_corrupt(_set("traceId", "z" * 32)), r"traceId 'z{32}' is not 32 hex digits"),
    "bad parent id": (_corrupt(_set("parentSpanId", "12345")), r"parentSpanId '12345' is not 16 hex digits"),
    "non-integer time": (_corrupt(_set("startTimeUnixNano", "12.5")), r"startTimeUnixNano '12.5' is not an integer"),
    "NaN": (good_line().replace(b'"intValue":"1"', b'"doubleValue":NaN', 1), r"NaN and Infinity are not JSON"),
    "Infinity": (good_line().replace(b'"intValue":"1"', b'"doubleValue":-Infinity', 1), r"NaN and Infinity"),
    "duplicate key": (
        b'{"resourceSpans":[],"resourceSpans":[]}\n',
        r"duplicate key 'resourceSpans' in a JSON object",
    ),
    "nested duplicate key": (
        good_line().replace(b'"stringValue":"search"', b'"stringValue":"search","stringValue":"x"', 1),
        r"duplicate key 'stringValue'",
    ),
    "duplicate attribute": (
        good_line().replace(b'{"key":"gen_ai.tool.name"', b'{"key":"gen_ai.operation.name"', 1),
        r"attribute 'gen_ai.operation.name' appears twice",
    ),
    "unknown schema version": (
        good_line({**_tool_attrs("run-x", "search", 1, {}, 1), A.SCHEMA_VERSION_ATTR: "99"}),
        r"has agent_replay\.schema_version '99'.*upgrade otel-agent-replay",
    ),
}


@pytest.mark.parametrize("kind", list(MALFORMED_LINES))
def test_each_malformed_line_says_what_and_where(tmp_path: Path, kind: str) -> None:
    bad, reason = MALFORMED_LINES[kind]
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line() + bad + good_line())
    with pytest.raises(TapeFormatError, match=at(path, 2) + r"(span '[^']*'(: | ))?" + reason) as info:
        load_tape(path)
    assert info.value.path == str(path)
    assert info.value.line == 2
    assert re.search(r"(re-record|upgrade)", str(info.value))  # it ends with the fix


def test_malformed_first_line_of_json_lines_is_reported_as_that_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"resourceSpans": [{\n' + good_line() + good_line())
    with pytest.raises(TapeFormatError, match=at(path, 1) + "invalid JSON"):
        load_tape(path)


def test_malformed_document_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text('{\n  "resourceSpans": [\n    {"scopeSpans": [}\n  ]\n}\n')
    with pytest.raises(TapeFormatError, match=at(path, 3) + "invalid JSON"):
        load_tape(path)


def test_duplicate_key_in_a_document_names_its_line(tmp_path: Path, scenario: Recording) -> None:
    text = json.dumps(otlp_dict(scenario.spans[:2]), indent=2).splitlines()
    line = next(i for i, t in enumerate(text) if '"name":' in t)
    text.insert(line + 1, text[line])  # the same key again, in the same object
    path = tmp_path / "doc.json"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TapeFormatError, match=r"duplicate key 'name'") as info:
        load_tape(path)
    object_start = max(i for i in range(line) if text[i].endswith("{"))
    assert info.value.line == object_start + 1  # the line where the object with the repeated key opens


def test_nan_in_a_document_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text('{\n "resourceSpans": [\n  {"x": NaN}\n ]\n}\n')
    with pytest.raises(TapeFormatError, match=at(path, 3) + "NaN and Infinity"):
        load_tape(path)


def test_unterminated_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    torn = good_line()[:-40]  # the recorder died mid-write
    path.write_bytes(good_line() + good_line() + torn)
    with pytest.warns(TapeWarning, match=re.escape(f"{path}:3: skipped the unterminated last line")):
        tape = load_tape(path)
    assert len(tape.warnings) == 1
    assert tape.warnings[0].startswith(f"{path}:3: ")
    assert [len(r.steps) for r in tape.runs] == [2]


def test_a_torn_only_line_gives_an_empty_tape_and_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line()[:-30])
    with pytest.warns(TapeWarning, match=re.escape(f"{path}:1: ")):
        tape = load_tape(path)
    assert tape.runs == ()


def test_unterminated_last_line_that_parses_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line() + good_line().rstrip(b"\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tape = load_tape(path)
    assert tape.warnings == ()
    assert [len(r.steps) for r in tape.runs] == [2]


def test_spans_without_schema_version_are_accepted(tmp_path: Path) -> None:
    attrs = _tool_attrs("run-x", "search", 1, {"q": 1}, 2)
    del attrs[A.SCHEMA_VERSION_ATTR]
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line(attrs))
    assert load_tape(path).run("run-x").steps[0].args == {"q": 1}


def test_unknown_schema_version_in_jaeger_json_is_refused(tmp_path: Path, scenario: Recording) -> None:
    doc = to_jaeger(otlp_dict(scenario.spans))
    for tag in doc["data"][0]["spans"][0]["tags"]:
        if tag["key"] == A.SCHEMA_VERSION_ATTR:
            tag["value"] = "2"
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(TapeFormatError, match=r"schema_version '2'") as info:
        load_tape(path)
    assert info.value.line is not None and info.value.line > 1


def test_a_second_run_span_for_one_run_id_is_refused(tmp_path: Path) -> None:
    sdk = _Sdk()
    for _ in range(2):
        with sdk.span(A.run_span_name("a"), _run_attrs("run-x", "a")):
            pass
    path = write_one_span_per_line(tmp_path / "t.jsonl", sdk.finished())
    with pytest.raises(
        TapeFormatError, match=at(path, 2) + r"a second run span for run_id 'run-x' \(the first on line 1\)"
    ):
        load_tape(path)


def test_the_same_step_span_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    line = good_line()
    path.write_bytes(line + line)
    with pytest.raises(TapeFormatError, match=at(path, 2) + r"step span .* appears twice \(the first on line 1\)"):
        load_tape(path)


def test_missing_file_says_record_it(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.jsonl"
    with pytest.raises(TapeNotFoundError, match=re.escape(str(path)) + ".*Record it first"):
        load_tape(path)
    with pytest.raises(FileNotFoundError):
        load_tape(str(path))


def test_empty_and_blank_files_are_tapes_without_runs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n  \n\n")
    assert load_tape(empty).runs == ()
    assert load_tape(blank).runs == ()


def test_blank_lines_and_crlf_are_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n" + good_line().replace(b"\n", b"\r\n") + b"\n\n" + good_line())
    tape = load_tape(path)
    assert [len(r.steps) for r in tape.runs] == [2]


def test_garbage_collector_state_is_restored(tape_path: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"[]\n")
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            load_tape(tape_path)
            assert gc.isenabled() is enabled
            with pytest.raises(TapeFormatError):
                load_tape(bad)
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_non_ascii_text_survives(tmp_path: Path) -> None:
    attrs = _tool_attrs("run-x", "search", 1, {"q": "Zürich ☃"}, {"text": "naïve – 東京 🎉"})
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line(attrs))
    step = load_tape(path).run("run-x").steps[0]
    assert step.args == {"q": "Zürich ☃"}
    assert step.result == {"text": "naïve – 東京 🎉"}


def test_a_second_instrumentation_of_a_recorded_step_is_not_a_second_step(tmp_path: Path) -> None:
    def framework(tool: str, args: str) -> dict[str, Any]:  # a GenAI instrumentation's own tool span
        return {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: tool,
            A.GEN_AI_TOOL_CALL_ARGUMENTS: args,
        }

    sdk = _Sdk()
    with sdk.span(A.run_span_name("a"), _run_attrs("run-x", "a")) as run:
        with (
            sdk.span(A.tool_span_name("search"), framework("search", '{"q":1}'), parent=run) as outer,
            sdk.span(A.tool_span_name("search"), _tool_attrs("run-x", "search", 1, {"q": 1}, 2), parent=outer),
        ):
            pass
        with (
            sdk.span(A.tool_span_name("fetch"), _tool_attrs("run-x", "fetch", 2, {"id": 7}, 3), parent=run) as ours,
            sdk.span(A.tool_span_name("fetch"), framework("fetch", '{"id":7}'), parent=ours),
        ):
            pass
        with sdk.span(A.tool_span_name("geocode"), framework("geocode", '{"city":"Porto"}'), parent=run):
            pass  # a foreign step of its own, inside a recorded run: it joins the run
    path = write_one_span_per_line(tmp_path / "t.jsonl", sdk.finished())
    run_x = load_tape(path).run("run-x")
    assert [(s.step_id, s.seq) for s in run_x.steps] == [("search#1", 1), ("fetch#2", 2), ("geocode#1", 3)]
    assert run_x.steps[2].call_key == call_key("geocode", {"city": "Porto"})


def test_warnings_point_at_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line() + good_line()[:-20])
    with pytest.warns(TapeWarning) as caught:
        load_tape(path)
    assert [w.filename for w in caught] == [__file__]
    with pytest.warns(TapeWarning) as caught:
        list(iter_spans(path))
    assert [w.filename for w in caught] == [__file__]


@pytest.mark.parametrize("writer", [write_one_span_per_line, write_many_spans_per_line])
def test_very_long_lines_are_streamed_with_the_same_result(
    tmp_path: Path, scenario: Recording, monkeypatch: pytest.MonkeyPatch, writer: Any
) -> None:
    path = writer(tmp_path / "t.jsonl", scenario.spans)
    reference = load_tape(path)
    monkeypatch.setattr(tape_module, "_STREAMED_LINE", 200)  # every line counts as long
    streamed = load_tape(path)
    assert streamed.runs == reference.runs
    monkeypatch.undo()
    lines = [r.line for r in iter_spans(path)]
    monkeypatch.setattr(tape_module, "_STREAMED_LINE", 200)
    assert [r.line for r in iter_spans(path)] == lines


def test_errors_in_a_streamed_line_name_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tape_module, "_STREAMED_LINE", 200)
    path = tmp_path / "t.jsonl"
    path.write_bytes(good_line() + _corrupt(_set("startTimeUnixNano", "soon")))
    with pytest.raises(TapeFormatError, match=at(path, 2) + r"span '[^']*': startTimeUnixNano 'soon'"):
        load_tape(path)
    path.write_bytes(good_line() + good_line().replace(b'"stringValue":"search"', b'"stringValue":NaN', 1))
    with pytest.raises(TapeFormatError, match=at(path, 2) + "NaN and Infinity"):
        load_tape(path)
    path.write_bytes(good_line() + good_line()[:-50])
    with pytest.warns(TapeWarning, match=re.escape(f"{path}:2: skipped the unterminated last line")):
        assert len(load_tape(path).runs) == 1


def test_document_errors_name_the_span_line(tmp_path: Path, scenario: Recording) -> None:
    doc = otlp_dict(scenario.spans[:3])
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = "not-an-id"
    text = json.dumps(doc, indent=2)
    path = tmp_path / "doc.json"
    path.write_text(text)
    lines = text.splitlines()
    id_line = next(i for i, t in enumerate(lines) if '"not-an-id"' in t)
    span_line = max(i for i in range(id_line) if lines[i].strip() == "{") + 1
    with pytest.raises(TapeFormatError, match=at(path, span_line) + r"span '[^']*': spanId 'not-an-id'"):
        load_tape(path)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            '[\n  {"resourceSpans": []}\n]\n',
            r"a trace document \(OTLP or Jaeger JSON\) must be a JSON object, found an array",
        ),
        ('{\n  "resourceSpans": {}\n}\n', '"resourceSpans" must be an array, found an object'),
        ('{\n  "traces": []\n}\n', r"not a trace document: no \"resourceSpans\" \(OTLP\), \"data\" \(Jaeger\)"),
        ('{\n  "resourceSpans": [\n    {"x": 1e400}\n  ]\n}\n', "NaN and Infinity"),
        ('{\n  "resourceSpans": [],\n  "resourceSpans": []\n}\n', "duplicate key 'resourceSpans'"),
        ('{\n  "resourceSpans": []\n}\n{}\n', "invalid JSON"),
    ],
)
def test_malformed_documents_are_refused(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(TapeFormatError, match=re.escape(f"{path}:") + r"\d+: " + reason):
        load_tape(path)
