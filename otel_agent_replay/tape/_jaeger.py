"""Jaeger JSON → OTLP JSON: the one Jaeger decoder, undoing Jaeger's translation of OTLP.

Jaeger JSON (the UI's download, ``/api/traces``) writes ids as hex without leading zeros, times
in microseconds, the parent as a ``CHILD_OF`` reference and links as the other references,
attributes as typed tags, what OTLP keeps in span fields (status, kind, scope, trace state) as
tags of their own (``attributes.JAEGER_FIELD_TAGS``), events as logs whose ``event`` field is the
name, and the process's tags as the resource. ``otlp_from_jaeger`` turns a trace back into an
OTLP JSON ``TracesData`` object (what ``push`` sends and ``pull`` writes); the loader reads a
Jaeger span as the OTLP span this makes of it (``jaeger_span``), so a trace loads the same from
Jaeger JSON and from its pulled tape. What Jaeger dropped (array attributes, written as JSON
strings) stays as Jaeger has it. Malformed input is a ``SpanDataError`` naming the span.
"""

from __future__ import annotations

from typing import Any

from otel_agent_replay.core import attributes as A

from ._span import ZERO_SPAN_ID, SpanDataError, SpanRecord, b64, decode_double, int_or_none, is_any_hex, otlp_span
from ._strict_json import json_kind

__all__ = ["jaeger_records", "jaeger_span", "otlp_from_jaeger"]

_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS = {A.JAEGER_STATUS_OK: 1, A.JAEGER_STATUS_ERROR: 2}


def otlp_from_jaeger(trace: Any) -> dict[str, Any]:
    """One Jaeger trace (``{"traceID", "spans", "processes"}``) as an OTLP JSON ``TracesData`` object."""
    spans = _trace_spans(trace)
    processes = trace.get("processes") or {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for span in spans:
        converted, (scope_name, scope_version) = otlp_span_of(span)
        process = str(span.get("processID") or "")
        groups.setdefault((process, scope_name, scope_version), []).append(converted)
    resource_spans: dict[str, dict[str, Any]] = {}
    for (process_id, scope_name, scope_version), group in groups.items():
        rs = resource_spans.get(process_id)
        if rs is None:
            rs = resource_spans[process_id] = {"resource": _resource(processes.get(process_id)), "scopeSpans": []}
        scope_obj: dict[str, Any] = {"name": scope_name} if scope_name else {}
        if scope_version:
            scope_obj["version"] = scope_version
        rs["scopeSpans"].append({"scope": scope_obj, "spans": group})
    return {"resourceSpans": list(resource_spans.values())}


def jaeger_records(trace: Any, line: int) -> list[SpanRecord]:
    """The spans of one parsed Jaeger trace, as the loader's records."""
    return [jaeger_span(span, line) for span in _trace_spans(trace)]


def jaeger_span(span: dict[str, Any], line: int) -> SpanRecord:
    """One parsed Jaeger span, read as the OTLP span it stands for."""
    return otlp_span(otlp_span_of(span)[0], line)


def _trace_spans(trace: Any) -> list[Any]:
    if type(trace) is not dict:
        raise SpanDataError(f"Jaeger JSON: a trace must be an object, found {json_kind(trace)}")
    return list(trace.get("spans") or ())


def otlp_span_of(span: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str]]:
    """One Jaeger span as an OTLP JSON span, and its scope (name, version)."""
    name = span.get("operationName", "")
    if type(name) is not str:
        name = str(name)
    trace_id = _id(span.get("traceID"), 32, "traceID", name)
    out: dict[str, Any] = {"traceId": trace_id, "spanId": _id(span.get("spanID"), 16, "spanID", name)}
    parent, links = _references(span, trace_id, name)
    attributes: list[dict[str, Any]] = []
    seen: set[str] = set()
    fields: dict[str, Any] = {}
    for tag in span.get("tags") or ():
        key = str(tag.get("key"))
        value = _value(tag, name)
        if key in A.JAEGER_FIELD_TAGS:
            fields[key] = _plain(value)
            continue
        if key in seen:
            raise SpanDataError(f"span {name!r}: tag {key!r} appears twice")
        seen.add(key)
        attributes.append({"key": key, "value": value})
    if fields.get(A.JAEGER_TRACE_STATE):
        out["traceState"] = str(fields[A.JAEGER_TRACE_STATE])
    if parent:
        out["parentSpanId"] = parent
    start = _micros(span.get("startTime"), "startTime", name)
    out["name"] = name
    out["kind"] = _KINDS.get(str(fields.get(A.JAEGER_SPAN_KIND, "internal")).lower(), 1)
    out["startTimeUnixNano"] = str(start * 1000)
    out["endTimeUnixNano"] = str((start + _micros(span.get("duration"), "duration", name)) * 1000)
    if attributes:
        out["attributes"] = attributes
    events = [_event(log, name) for log in span.get("logs") or ()]
    if events:
        out["events"] = events
    if links:
        out["links"] = links
    out["status"] = _status(fields)
    scope_name = fields.get(A.JAEGER_SCOPE_NAME) or fields.get(A.JAEGER_LIBRARY_NAME) or ""
    scope_version = fields.get(A.JAEGER_SCOPE_VERSION) or fields.get(A.JAEGER_LIBRARY_VERSION) or ""
    return out, (str(scope_name), str(scope_version))


def _resource(process: Any) -> dict[str, Any]:
    if type(process) is not dict:
        return {}
    attrs = [{"key": A.SERVICE_NAME, "value": {"stringValue": str(process.get("serviceName") or "")}}]
    for tag in process.get("tags") or ():
        if tag.get("key") != A.SERVICE_NAME:
            attrs.append({"key": str(tag.get("key")), "value": _value(tag, "process")})
    return {"attributes": attrs}


def _references(span: dict[str, Any], trace_id: str, name: str) -> tuple[str, list[dict[str, Any]]]:
    """The parent span id and the links: the first CHILD_OF in the trace, else FOLLOWS_FROM, else parentSpanID."""
    refs = []
    for ref in span.get("references") or ():
        ref_trace = _id(ref.get("traceID") or trace_id, 32, "references.traceID", name)
        refs.append((ref.get("refType"), ref_trace, _id(ref.get("spanID"), 16, "references.spanID", name)))
    parent_at = next((i for i, r in enumerate(refs) if r[0] == "CHILD_OF" and r[1] == trace_id), None)
    if parent_at is None:
        parent_at = next((i for i, r in enumerate(refs) if r[0] == "FOLLOWS_FROM" and r[1] == trace_id), None)
    parent = refs[parent_at][2] if parent_at is not None else ""
    if not parent and span.get("parentSpanID"):
        parent = _id(span["parentSpanID"], 16, "parentSpanID", name)
    links = [{"traceId": t, "spanId": s} for i, (_, t, s) in enumerate(refs) if i != parent_at]
    return ("" if parent == ZERO_SPAN_ID else parent), links


def _event(log: dict[str, Any], where: str) -> dict[str, Any]:
    event: dict[str, Any] = {"timeUnixNano": str(_micros(log.get("timestamp"), "logs.timestamp", where) * 1000)}
    attributes = []
    for field in log.get("fields") or ():
        value = _value(field, where)
        if field.get("key") == A.JAEGER_EVENT_NAME and "name" not in event:
            event["name"] = str(_plain(value))
        else:
            attributes.append({"key": str(field.get("key")), "value": value})
    event.setdefault("name", "")
    if attributes:
        event["attributes"] = attributes
    return event


def _status(fields: dict[str, Any]) -> dict[str, Any]:
    code = _STATUS.get(str(fields.get(A.JAEGER_STATUS_CODE, "")).upper(), 0)
    if not code and fields.get(A.JAEGER_ERROR) in (True, "true"):
        code = 2
    status: dict[str, Any] = {}
    message = fields.get(A.JAEGER_STATUS_DESCRIPTION)
    if message:
        status["message"] = str(message)
    if code:
        status["code"] = code
    return status


def _value(tag: dict[str, Any], where: str) -> dict[str, Any]:
    """A typed Jaeger tag as an OTLP ``AnyValue``; a value that is not of its type is an error."""
    kind = tag.get("type", "string")
    value = tag.get("value")
    if kind == "string":
        return {"stringValue": value if type(value) is str else "" if value is None else str(value)}
    if kind == "int64":
        number = int_or_none(value)
        if number is not None:
            return {"intValue": str(number)}
    elif kind == "bool":
        if type(value) is bool:
            return {"boolValue": value}
        if value in ("true", "false"):
            return {"boolValue": value == "true"}
    elif kind == "float64":
        decode_double(value, str(tag.get("key", "")), where)
        return {"doubleValue": value}
    elif kind == "binary":
        if type(value) is str and b64(value) is not None:
            return {"bytesValue": value}
    else:
        raise SpanDataError(f"span {where!r}: tag {tag.get('key')!r} has an unknown type {kind!r}")
    raise SpanDataError(f"span {where!r}: tag {tag.get('key')!r}: {value!r} is not a valid {kind}")


def _plain(value: dict[str, Any]) -> Any:
    """The Python value of an ``AnyValue`` made by ``_value`` (for the field tags)."""
    if "intValue" in value:
        return int(value["intValue"])
    return next(iter(value.values()))


def _id(value: Any, width: int, field: str, name: str) -> str:
    # Jaeger writes ids as hex without leading zeros, or zero-padded to 16 digits.
    if type(value) is str and 0 < len(value) <= width and is_any_hex(value):
        return value.lower().rjust(width, "0")
    if not value:
        raise SpanDataError(f"span {name!r} has no {field}: every Jaeger span needs a traceID and a spanID")
    raise SpanDataError(f"span {name!r}: {field} {value!r} is not a hex id of at most {width} digits")


def _micros(value: Any, field: str, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)
    if value is None:
        return 0
    raise SpanDataError(f"span {name!r}: {field} {value!r} is not an integer number of microseconds")
