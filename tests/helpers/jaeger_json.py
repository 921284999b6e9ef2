"""Jaeger's JSON for a tape's spans, built by the rules Jaeger documents, to serve from a fake query API.

- classic (``/api/traces/{id}``, the UI's download): ``{"data": [{"traceID", "spans", "processes"}]}``;
  ids in hex, times in microseconds, the parent as the first ``CHILD_OF`` reference, links as
  ``FOLLOWS_FROM``, kind/status/scope as ``span.kind`` / ``otel.status_code`` /
  ``otel.scope.name`` tags, events as logs with an ``event`` field, the resource as the process;
- api/v3 (``/api/v3/traces/{id}``): ``{"result": TracesData}`` in protobuf's JSON mapping, ids in
  base64 and enums by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict

from otel_agent_replay.backends._otlp_json import traces_data
from otel_agent_replay.core import attributes as A

_KIND = {2: "server", 3: "client", 4: "producer", 5: "consumer"}


def tape_documents(path: Path) -> list[dict[str, Any]]:
    """The OTLP JSON objects of a tape, one per line."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def v3_answer(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The /api/v3 answer for these spans: one ``result`` with every resourceSpans, protobuf JSON."""
    merged = {"resourceSpans": [rs for doc in docs for rs in doc["resourceSpans"]]}
    return {"result": MessageToDict(traces_data(merged))}


def _tag(key: str, value: dict[str, Any]) -> dict[str, Any]:
    if "stringValue" in value:
        return {"key": key, "type": "string", "value": value["stringValue"]}
    if "boolValue" in value:
        return {"key": key, "type": "bool", "value": value["boolValue"]}
    if "intValue" in value:
        return {"key": key, "type": "int64", "value": int(value["intValue"])}
    if "doubleValue" in value:
        return {"key": key, "type": "float64", "value": value["doubleValue"]}
    if "arrayValue" in value:  # Jaeger writes arrays as JSON strings
        items = [next(iter(v.values())) for v in value["arrayValue"].get("values", [])]
        return {"key": key, "type": "string", "value": orjson.dumps(items).decode()}
    raise AssertionError(f"no Jaeger tag for {value}")


def classic_answer(docs: list[dict[str, Any]], *, short_ids: bool = False) -> dict[str, Any]:
    """The /api/traces answer for these spans (one trace per trace id), as Jaeger's query service writes it."""
    traces: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for rs in doc["resourceSpans"]:
            attrs = {kv["key"]: kv["value"] for kv in rs.get("resource", {}).get("attributes", [])}
            process = {
                "serviceName": attrs.get(A.SERVICE_NAME, {}).get("stringValue", ""),
                "tags": [_tag(k, v) for k, v in attrs.items() if k != A.SERVICE_NAME],
            }
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    trace = traces.setdefault(
                        span["traceId"], {"traceID": span["traceId"], "spans": [], "processes": {}, "warnings": None}
                    )
                    pid = next((p for p, known in trace["processes"].items() if known == process), None)
                    if pid is None:
                        pid = f"p{len(trace['processes']) + 1}"
                        trace["processes"][pid] = process
                    trace["spans"].append(_span(span, ss.get("scope", {}), pid, short_ids))
    return {"data": list(traces.values()), "total": 0, "limit": 0, "offset": 0, "errors": None}


def _short(hex_id: str, short: bool) -> str:
    return hex_id.lstrip("0") or "0" if short else hex_id


def _span(span: dict[str, Any], scope: dict[str, Any], pid: str, short_ids: bool) -> dict[str, Any]:
    refs = []
    if span.get("parentSpanId"):
        refs.append(
            {
                "refType": "CHILD_OF",
                "traceID": _short(span["traceId"], short_ids),
                "spanID": _short(span["parentSpanId"], short_ids),
            }
        )
    for link in span.get("links", []):
        refs.append({"refType": "FOLLOWS_FROM", "traceID": link["traceId"], "spanID": link["spanId"]})
    tags = [_tag(kv["key"], kv["value"]) for kv in span.get("attributes", [])]
    if span.get("kind") in _KIND:
        tags.append({"key": A.JAEGER_SPAN_KIND, "type": "string", "value": _KIND[span["kind"]]})
    if scope.get("name"):
        tags.append({"key": A.JAEGER_SCOPE_NAME, "type": "string", "value": scope["name"]})
    if scope.get("version"):
        tags.append({"key": A.JAEGER_SCOPE_VERSION, "type": "string", "value": scope["version"]})
    status = span.get("status", {})
    if status.get("code") == 2:
        tags.append({"key": A.JAEGER_STATUS_CODE, "type": "string", "value": "ERROR"})
        tags.append({"key": A.JAEGER_ERROR, "type": "bool", "value": True})
    if status.get("message"):
        tags.append({"key": A.JAEGER_STATUS_DESCRIPTION, "type": "string", "value": status["message"]})
    tags.append({"key": A.JAEGER_SPAN_FORMAT, "type": "string", "value": "otlp"})
    logs = []
    for event in span.get("events", []):
        fields = [{"key": A.JAEGER_EVENT_NAME, "type": "string", "value": event["name"]}]
        fields += [_tag(kv["key"], kv["value"]) for kv in event.get("attributes", [])]
        logs.append({"timestamp": int(event["timeUnixNano"]) // 1000, "fields": fields})
    start = int(span["startTimeUnixNano"]) // 1000
    return {
        "traceID": _short(span["traceId"], short_ids),
        "spanID": _short(span["spanId"], short_ids),
        "operationName": span["name"],
        "references": refs,
        "startTime": start,
        "duration": int(span["endTimeUnixNano"]) // 1000 - start,
        "tags": tags,
        "logs": logs,
        "processID": pid,
        "warnings": None,
        "flags": 1,
    }
