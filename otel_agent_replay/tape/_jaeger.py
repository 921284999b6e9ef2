"""One Jaeger JSON span → a ``SpanRecord``: undoing Jaeger's translation of OTLP.

Jaeger JSON (the UI's download, ``/api/traces/{id}``) writes ids as hex without leading zeros,
times in microseconds, the parent as a ``CHILD_OF`` reference, attributes as typed tags, and
what OTLP keeps in span fields (status, kind, scope) as tags of its own (``JAEGER_FIELD_TAGS``):
those are read back into the span's error and never land in its attributes. An exception
event is a log whose ``event`` field is ``exception``.
"""

from __future__ import annotations

import sys
from typing import Any

from otel_agent_replay.core.attributes import (
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    JAEGER_ERROR,
    JAEGER_EVENT_NAME,
    JAEGER_FIELD_TAGS,
    JAEGER_STATUS_CODE,
    JAEGER_STATUS_DESCRIPTION,
    JAEGER_STATUS_ERROR,
)

from ._span import (
    ZERO_SPAN_ID,
    SpanDataError,
    SpanRecord,
    b64,
    check_schema_version,
    decode_double,
    int_or_none,
    is_any_hex,
    step_error,
)
from ._strict_json import json_kind
from ._values import StepError

__all__ = ["jaeger_records", "jaeger_span"]

_intern = sys.intern


def jaeger_records(trace: Any, line: int) -> list[SpanRecord]:
    """The spans of one parsed Jaeger trace (``{"traceID": ..., "spans": [...]}``)."""
    if type(trace) is not dict:
        raise SpanDataError(f"Jaeger JSON: a trace must be an object, found {json_kind(trace)}")
    return [jaeger_span(span, line) for span in trace.get("spans") or ()]


def jaeger_span(span: dict[str, Any], line: int) -> SpanRecord:
    """One parsed Jaeger span."""
    name = span.get("operationName", "")
    if type(name) is not str:
        name = str(name)
    trace_id = _jaeger_id(span.get("traceID"), 32, "traceID", name)
    span_id = _jaeger_id(span.get("spanID"), 16, "spanID", name)
    parent = _parent(span, trace_id, name)
    start_ns = _micros(span.get("startTime"), "startTime", name) * 1000
    end_ns = start_ns + _micros(span.get("duration"), "duration", name) * 1000
    attributes: dict[str, Any] = {}
    failed = False
    status_message: Any = None
    for tag in span.get("tags") or ():
        key = tag["key"]
        value = _jaeger_value(tag, name)
        if key in JAEGER_FIELD_TAGS:
            if key == JAEGER_STATUS_CODE:
                failed = failed or value == JAEGER_STATUS_ERROR
            elif key == JAEGER_STATUS_DESCRIPTION:
                status_message = value
            elif key == JAEGER_ERROR:
                failed = failed or value is True or value == "true"
            continue
        if key in attributes:
            raise SpanDataError(f"span {name!r}: tag {key!r} appears twice")
        attributes[_intern(key)] = value
    error = _jaeger_exception(span.get("logs"), status_message, name) if failed else None
    check_schema_version(attributes, name)
    return SpanRecord(trace_id, span_id, parent, name, start_ns, end_ns, attributes, error, line)


def _parent(span: dict[str, Any], trace_id: str, name: str) -> str:
    """The parent span id: the first CHILD_OF reference in the trace, else FOLLOWS_FROM, else ``parentSpanID``."""
    parent = ""
    follows = ""
    for ref in span.get("references") or ():
        ref_trace = ref.get("traceID")
        if ref_trace and _jaeger_id(ref_trace, 32, "references.traceID", name) != trace_id:
            continue  # a reference to another trace is a link, not a parent
        ref_type = ref.get("refType")
        if ref_type == "CHILD_OF":
            parent = _jaeger_id(ref.get("spanID"), 16, "references.spanID", name)
            break
        if ref_type == "FOLLOWS_FROM" and not follows:
            follows = _jaeger_id(ref.get("spanID"), 16, "references.spanID", name)
    parent = parent or follows
    if not parent and span.get("parentSpanID"):
        parent = _jaeger_id(span["parentSpanID"], 16, "parentSpanID", name)
    return "" if parent == ZERO_SPAN_ID else parent


def _jaeger_id(value: Any, width: int, field: str, name: str) -> str:
    # Jaeger writes ids as hex without leading zeros, or zero-padded to 16 digits.
    if type(value) is str and 0 < len(value) <= width and is_any_hex(value):
        return value.lower().rjust(width, "0")
    if not value:
        raise SpanDataError(f"span {name!r} has no {field}: every Jaeger span needs a traceID and a spanID")
    raise SpanDataError(
        f"span {name!r}: {field} {value!r} is not a hex id of at most {width} digits",
    )


def _micros(value: Any, field: str, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)
    if value is None:
        return 0
    raise SpanDataError(f"span {name!r}: {field} {value!r} is not an integer number of microseconds")


def _jaeger_value(tag: dict[str, Any], where: str) -> Any:
    kind = tag.get("type", "string")
    value = tag.get("value")
    if kind == "string":
        return value if type(value) is str else "" if value is None else str(value)
    if kind == "int64":
        number = int_or_none(value)
        if number is not None:
            return number
    elif kind == "bool":
        if type(value) is bool:
            return value
        if value in ("true", "false"):
            return value == "true"
    elif kind == "float64":
        return decode_double(value, tag.get("key", ""), where)
    elif kind == "binary":
        decoded = b64(value) if type(value) is str else None
        if decoded is not None:
            return decoded
    else:
        raise SpanDataError(f"span {where!r}: tag {tag.get('key')!r} has an unknown type {kind!r}")
    raise SpanDataError(f"span {where!r}: tag {tag.get('key')!r}: {value!r} is not a valid {kind}")


def _jaeger_exception(logs: Any, status_message: Any, where: str) -> StepError:
    for log in reversed(logs or ()):
        fields = {field["key"]: _jaeger_value(field, where) for field in log.get("fields") or ()}
        if fields.get(JAEGER_EVENT_NAME) == EXCEPTION_EVENT:
            return step_error(fields.get(EXCEPTION_TYPE), fields.get(EXCEPTION_MESSAGE), status_message)
    return step_error(None, None, status_message)
