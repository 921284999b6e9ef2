"""One OTLP JSON span → SpanRecord: ids, times, every AnyValue type, status and exception, schema version."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import StepError
from otel_agent_replay.tape._span import (
    SpanDataError,
    decode_problem,
    int_or_none,
    otlp_records,
    otlp_span,
)

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def span(**fields: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": SPAN, "name": "execute_tool search", **fields}


def kv(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def test_ids_and_times_in_otlp_json() -> None:
    record = otlp_span(
        span(parentSpanId="0" * 16, startTimeUnixNano="1760000000000000001", endTimeUnixNano=1760000000000000009),
        7,
    )
    assert (record.trace_id, record.span_id, record.parent_span_id) == (TRACE, SPAN, "")
    assert (record.start_ns, record.end_ns, record.line) == (1760000000000000001, 1760000000000000009, 7)


def test_ids_in_base64_and_upper_case_hex_are_normalised() -> None:
    b64 = base64.b64encode(bytes.fromhex(TRACE)).decode()
    record = otlp_span(span(traceId=b64, spanId=SPAN.upper()), 1)
    assert (record.trace_id, record.span_id) == (TRACE, SPAN)


def test_every_any_value_type_is_decoded() -> None:
    attrs = [
        kv("s", {"stringValue": "naïve"}),
        kv("i", {"intValue": "-42"}),
        kv("b", {"boolValue": True}),
        kv("d", {"doubleValue": 1}),
        kv("inf", {"doubleValue": "Infinity"}),
        kv("arr", {"arrayValue": {"values": [{"intValue": 1}, {"stringValue": "x"}]}}),
        kv("map", {"kvlistValue": {"values": [kv("k", {"boolValue": False})]}}),
        kv("raw", {"bytesValue": base64.b64encode(b"\x00\xff").decode()}),
        kv("empty", {}),
    ]
    decoded = otlp_span(span(attributes=attrs), 1).attributes
    assert decoded == {
        "s": "naïve",
        "i": -42,
        "b": True,
        "d": 1.0,
        "inf": "Infinity",  # protobuf JSON's non-finite double stays text, never a NaN
        "arr": [1, "x"],
        "map": {"k": False},
        "raw": b"\x00\xff",
        "empty": None,
    }


def test_status_error_takes_the_last_exception_event() -> None:
    events = [
        {"name": "exception", "attributes": [kv(A.EXCEPTION_TYPE, {"stringValue": "KeyError"})]},
        {
            "name": "exception",
            "attributes": [
                kv(A.EXCEPTION_TYPE, {"stringValue": "ValueError"}),
                kv(A.EXCEPTION_MESSAGE, {"stringValue": "bad"}),
            ],
        },
    ]
    record = otlp_span(span(status={"code": "STATUS_CODE_ERROR", "message": "m"}, events=events), 1)
    assert record.error == StepError("ValueError", "bad")
    assert otlp_span(span(status={"code": 2, "message": "quota"}), 1).error == StepError("", "quota")
    assert otlp_span(span(status={"code": 1}, events=events), 1).error is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"spanId": ""}, "has no spanId"),
        ({"traceId": "xyz"}, "traceId 'xyz' is not 32 hex digits"),
        ({"startTimeUnixNano": -1}, "startTimeUnixNano -1 is not an integer"),
        ({"attributes": [kv("n", {"intValue": "1.5"})]}, "intValue '1.5' is not an integer"),
        ({"attributes": [kv("n", {"arrayValue": {"values": [{"stringValue": 3}]}})]}, "stringValue 3 is not a string"),
        ({"attributes": [kv("n", {"bytesValue": "***"})]}, "bytesValue is not base64"),
        ({"attributes": [kv("n", {"mystery": 1})]}, "unknown value type"),
        ({"attributes": [kv("n", {"boolValue": 1}), kv("m", {})]}, "boolValue 1 is not true or false"),
        ({"attributes": [kv("n", {}), kv("n", {})]}, "attribute 'n' appears twice"),
        ({"attributes": [{"value": {}}]}, "an attribute has no key"),
    ],
)
def test_malformed_spans_are_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(SpanDataError, match=message):
        otlp_span(span(**fields), 1)


def test_an_unknown_schema_version_is_refused_with_its_own_fix() -> None:
    attrs = [kv(A.SCHEMA_VERSION_ATTR, {"stringValue": "99"})]
    with pytest.raises(SpanDataError) as info:
        otlp_span(span(attributes=attrs), 1)
    assert decode_problem(info.value, "the generic fix").endswith("re-record the tape with this version")


def test_decode_problem_of_wrongly_shaped_data_names_the_shape() -> None:
    with pytest.raises(AttributeError) as info:
        otlp_records([["not an object"]], 1)
    text = decode_problem(info.value, "fix it")
    assert text.startswith("malformed span data (AttributeError: ")
    assert text.endswith("(resourceSpans → scopeSpans → spans) or Jaeger's JSON shape; fix it")
    with pytest.raises(SpanDataError, match='"resourceSpans" must be a list, found an object'):
        otlp_records({}, 1)


def test_int_or_none() -> None:
    assert [int_or_none(v) for v in (3, "-12", "1.0", True, None, 2.0)] == [3, -12, None, None, None, None]
