"""One Jaeger JSON span → SpanRecord: short ids, references, typed tags, status tags and exception logs."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import SpanDataError, StepError, otlp_from_jaeger
from otel_agent_replay.tape._jaeger import jaeger_records, jaeger_span
from otel_agent_replay.tape._span import otlp_span

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(**fields: Any) -> dict[str, Any]:
    return {"traceID": TRACE, "spanID": "abc", "operationName": "execute_tool search", **fields}


def tag(key: str, value: Any, kind: str = "string") -> dict[str, Any]:
    return {"key": key, "type": kind, "value": value}


def test_ids_are_padded_and_times_become_nanoseconds() -> None:
    record = jaeger_span(span(traceID="ABC123", startTime=1_760_000_000_000_000, duration="25"), 4)
    assert record.trace_id == "abc123".rjust(32, "0")
    assert record.span_id == "0000000000000abc"
    assert (record.start_ns, record.end_ns - record.start_ns, record.line) == (1_760_000_000_000_000_000, 25_000, 4)


def test_the_parent_is_child_of_in_this_trace_else_follows_from() -> None:
    refs = [
        {"refType": "CHILD_OF", "traceID": "f" * 32, "spanID": "1"},  # another trace: a link
        {"refType": "FOLLOWS_FROM", "traceID": TRACE, "spanID": "2"},
        {"refType": "CHILD_OF", "traceID": TRACE, "spanID": "3"},
    ]
    assert jaeger_span(span(references=refs), 1).parent_span_id == "3".rjust(16, "0")
    assert jaeger_span(span(references=refs[:2]), 1).parent_span_id == "2".rjust(16, "0")
    assert jaeger_span(span(references=refs[:1], parentSpanID="4"), 1).parent_span_id == "4".rjust(16, "0")
    assert jaeger_span(span(parentSpanID="0" * 16), 1).parent_span_id == ""


def test_typed_tags_become_attributes_and_field_tags_do_not() -> None:
    tags = [
        tag("s", None),
        tag("i", "-7", "int64"),
        tag("b", "true", "bool"),
        tag("f", 0.5, "float64"),
        tag("raw", base64.b64encode(b"\x01").decode(), "binary"),
        tag(A.JAEGER_SPAN_KIND, "internal"),
        tag("otel.scope.name", "otel_agent_replay"),
    ]
    record = jaeger_span(span(tags=tags), 1)
    assert record.attributes == {"s": "", "i": -7, "b": True, "f": 0.5, "raw": b"\x01"}
    assert record.error is None


def test_status_tags_and_the_last_exception_log_make_the_error() -> None:
    exception_log = {
        "fields": [
            tag(A.JAEGER_EVENT_NAME, A.EXCEPTION_EVENT),
            tag(A.EXCEPTION_TYPE, "TimeoutError"),
            tag(A.EXCEPTION_MESSAGE, "slow"),
        ]
    }
    other_log = {"fields": [tag(A.JAEGER_EVENT_NAME, "retry")]}
    failed = [tag(A.JAEGER_STATUS_CODE, A.JAEGER_STATUS_ERROR), tag(A.JAEGER_STATUS_DESCRIPTION, "down")]
    record = jaeger_span(span(tags=failed, logs=[exception_log, other_log]), 1)
    assert record.error == StepError("TimeoutError", "slow")
    assert jaeger_span(span(tags=[tag(A.JAEGER_ERROR, True, "bool")]), 1).error == StepError("", "")
    assert jaeger_span(span(tags=failed), 1).error == StepError("", "down")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"spanID": None}, "has no spanID"),
        ({"spanID": "x1"}, "spanID 'x1' is not a hex id of at most 16 digits"),
        ({"duration": 1.5}, "duration 1.5 is not an integer number of microseconds"),
        ({"tags": [tag("n", "1.5", "int64")]}, "tag 'n': '1.5' is not a valid int64"),
        ({"tags": [tag("n", 1, "complex")]}, "tag 'n' has an unknown type 'complex'"),
        ({"tags": [tag("n", "a"), tag("n", "b")]}, "tag 'n' appears twice"),
        ({"tags": [tag(A.SCHEMA_VERSION_ATTR, "2")]}, "agent_replay.schema_version '2'"),
    ],
)
def test_malformed_jaeger_spans_are_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(SpanDataError, match=message):
        jaeger_span(span(**fields), 1)


def test_a_trace_must_be_an_object() -> None:
    assert [r.span_id for r in jaeger_records({"spans": [span()]}, 1)] == ["0000000000000abc"]
    with pytest.raises(SpanDataError, match="a trace must be an object, found an array"):
        jaeger_records([], 1)


def test_the_loader_and_push_pull_read_jaeger_alike() -> None:
    """One decoder: a Jaeger trace loads as the same records whether read directly or as the OTLP JSON of it."""
    failed = [tag(A.JAEGER_STATUS_CODE, A.JAEGER_STATUS_ERROR), tag(A.JAEGER_STATUS_DESCRIPTION, "down")]
    exception_log = {"fields": [tag(A.JAEGER_EVENT_NAME, A.EXCEPTION_EVENT), tag(A.EXCEPTION_TYPE, "KeyError")]}
    trace = {
        "traceID": TRACE,
        "spans": [
            span(spanID="a", tags=[tag("i", "7", "int64"), tag("f", "NaN", "float64")]),
            span(
                spanID="b", references=[{"refType": "FOLLOWS_FROM", "spanID": "a"}], tags=failed, logs=[exception_log]
            ),
        ],
        "processes": {},
    }
    direct = jaeger_records(trace, 3)
    document = otlp_from_jaeger(trace)
    via_otlp = [otlp_span(s, 3) for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert direct == via_otlp
    assert direct[1].parent_span_id == direct[0].span_id and direct[1].error == StepError("KeyError", "down")


@pytest.mark.parametrize("bad", [tag("b", "yes", "bool"), tag("i", "1e3", "int64"), tag("f", "x", "float64")])
def test_push_and_pull_refuse_what_the_loader_refuses(bad: dict[str, Any]) -> None:
    with pytest.raises(SpanDataError):
        otlp_from_jaeger({"traceID": TRACE, "spans": [span(tags=[bad])]})
    with pytest.raises(SpanDataError):
        jaeger_span(span(tags=[bad]), 1)
