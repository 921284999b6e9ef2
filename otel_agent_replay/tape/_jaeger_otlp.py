"""Jaeger JSON (the UI's download, ``/api/traces``) back to OTLP JSON, losing as little as Jaeger allows.

Jaeger's translation of OTLP (see the OpenTelemetry Collector's Jaeger translator) keeps the
process's tags as the resource, the parent as the first ``CHILD_OF`` reference, links as the
other references, status, kind and scope as tags of their own (``attributes.JAEGER_FIELD_TAGS``)
and events as logs whose ``event`` field is the name. ``otlp_from_jaeger`` undoes each of those;
what Jaeger dropped (array attributes, written as JSON strings) stays as Jaeger has it. The
parent follows ``jaeger_decode``: a ``FOLLOWS_FROM`` reference in the trace is the parent of a
span without ``CHILD_OF``, so a trace loads the same from Jaeger JSON and from its pulled tape.
"""

from __future__ import annotations

from typing import Any

from otel_agent_replay.core import attributes as A

from ._span import SpanDataError
from ._strict_json import json_kind

__all__ = ["otlp_from_jaeger"]

_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS = {A.JAEGER_STATUS_OK: 1, A.JAEGER_STATUS_ERROR: 2}


def otlp_from_jaeger(trace: Any) -> dict[str, Any]:
    """One Jaeger trace (``{"traceID", "spans", "processes"}``) as an OTLP JSON ``TracesData`` object."""
    if type(trace) is not dict:
        raise SpanDataError(f"Jaeger JSON: a trace must be an object, found {json_kind(trace)}")
    processes = trace.get("processes") or {}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for span in trace.get("spans") or ():
        converted, (scope_name, scope_version) = _span(span)
        process = str(span.get("processID") or "")
        groups.setdefault((process, scope_name, scope_version), []).append(converted)
    resource_spans: dict[str, dict[str, Any]] = {}
    for (process_id, scope_name, scope_version), spans in groups.items():
        rs = resource_spans.get(process_id)
        if rs is None:
            rs = resource_spans[process_id] = {"resource": _resource(processes.get(process_id)), "scopeSpans": []}
        scope_obj: dict[str, Any] = {"name": scope_name} if scope_name else {}
        if scope_version:
            scope_obj["version"] = scope_version
        rs["scopeSpans"].append({"scope": scope_obj, "spans": spans})
    return {"resourceSpans": list(resource_spans.values())}


def _resource(process: Any) -> dict[str, Any]:
    if type(process) is not dict:
        return {}
    attrs = [{"key": A.SERVICE_NAME, "value": {"stringValue": str(process.get("serviceName") or "")}}]
    for tag in process.get("tags") or ():
        if tag.get("key") != A.SERVICE_NAME:
            attrs.append({"key": str(tag.get("key")), "value": _value(tag)})
    return {"attributes": attrs}


def _span(span: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str]]:
    """One Jaeger span as an OTLP JSON span, and its scope (name, version)."""
    name = str(span.get("operationName", ""))
    trace_id = _id(span.get("traceID"), 32, "traceID", name)
    out: dict[str, Any] = {"traceId": trace_id, "spanId": _id(span.get("spanID"), 16, "spanID", name)}
    parent, links = _references(span, trace_id, name)
    attributes: list[dict[str, Any]] = []
    fields: dict[str, Any] = {}
    for tag in span.get("tags") or ():
        key = str(tag.get("key"))
        if key in A.JAEGER_FIELD_TAGS:
            fields[key] = tag.get("value")
        else:
            attributes.append({"key": key, "value": _value(tag)})
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


def _references(span: dict[str, Any], trace_id: str, name: str) -> tuple[str, list[dict[str, Any]]]:
    """The parent span id and the links: the first CHILD_OF in the trace, else FOLLOWS_FROM."""
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
    return ("" if parent == "0" * 16 else parent), links


def _event(log: dict[str, Any], where: str) -> dict[str, Any]:
    event: dict[str, Any] = {"timeUnixNano": str(_micros(log.get("timestamp"), "logs.timestamp", where) * 1000)}
    attributes = []
    for field in log.get("fields") or ():
        if field.get("key") == A.JAEGER_EVENT_NAME and "name" not in event:
            event["name"] = str(field.get("value", ""))
        else:
            attributes.append({"key": str(field.get("key")), "value": _value(field)})
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


def _value(tag: dict[str, Any]) -> dict[str, Any]:
    """A typed Jaeger tag value as an OTLP ``AnyValue``."""
    kind = tag.get("type", "string")
    value = tag.get("value")
    if kind == "bool":
        return {"boolValue": value is True or value == "true"}
    if kind == "int64":
        return {"intValue": str(int(str(value)))}
    if kind == "float64":
        return {"doubleValue": value}
    if kind == "binary":
        return {"bytesValue": value}
    return {"stringValue": "" if value is None else str(value)}


def _id(value: Any, width: int, field: str, name: str) -> str:
    if type(value) is str and 0 < len(value) <= width and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower().rjust(width, "0")
    raise SpanDataError(f"span {name!r}: {field} {value!r} is not a hex id of at most {width} digits")


def _micros(value: Any, field: str, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    if type(value) is str and value.isdigit():
        return int(value)
    if value is None:
        return 0
    raise SpanDataError(f"span {name!r}: {field} {value!r} is not an integer number of microseconds")
