"""What a span is, in a form that can be compared across OTLP JSON, Jaeger's api/v3 and Jaeger's classic JSON.

``otlp_facts`` reads OTLP JSON documents (tape lines, the Collector's file exporter, api/v3's ``result``);
``classic_facts`` reads Jaeger's classic ``/api/traces/{id}`` answer and undoes the flattening Jaeger
does there (span kind, status, scope as tags; resource as process tags; events as logs; links as
FOLLOWS_FROM references without attributes; arrays as JSON strings). ``differences`` lists every fact
that differs, one readable line each, so a test can assert there are none and, on a deliberately
altered copy, that the alteration is reported.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

Facts = dict[str, dict[str, Any]]
_HEX = re.compile(r"[0-9a-f]+")
_KINDS = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
# Tags Jaeger's classic model adds for what OTLP holds in fields of their own.
_CLASSIC_FIELD_TAGS = frozenset(
    {"span.kind", "otel.status_code", "otel.status_description", "error", "otel.scope.name", "otel.scope.version"}
)


def hex_id(value: str, width: int) -> str:
    """An id as lower-case hex of ``width`` digits, from hex (Jaeger may drop leading zeros) or base64."""
    text = value.strip()
    if _HEX.fullmatch(text) and len(text) <= width:
        return text.rjust(width, "0")
    try:
        return base64.b64decode(text, validate=True).hex().rjust(width, "0")
    except binascii.Error as exc:
        raise AssertionError(f"{value!r} is neither a hex nor a base64 id") from exc


def any_value(value: Mapping[str, Any]) -> Any:
    """An OTLP JSON AnyValue as Python (ints from their decimal strings)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return ("bytes", value["bytesValue"])
    return None


def attributes(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """OTLP JSON key-value pairs as a dict."""
    return {item["key"]: any_value(item.get("value", {})) for item in items}


def _enum(value: Any, names: Mapping[str, int], prefix: str) -> int:
    if isinstance(value, str):
        return names[value.removeprefix(prefix)]
    return int(value or 0)


def otlp_facts(docs: Iterable[Mapping[str, Any]]) -> Facts:
    """Every span of some OTLP JSON ``TracesData`` documents, by span id."""
    out: Facts = {}
    for doc in docs:
        for rs in doc.get("resourceSpans", []):
            resource = attributes(rs.get("resource", {}).get("attributes", []))
            for ss in rs.get("scopeSpans", []):
                scope = ss.get("scope", {})
                for span in ss.get("spans", []):
                    status = span.get("status", {})
                    span_id = hex_id(span["spanId"], 16)
                    assert span_id not in out, f"span {span_id} twice"
                    out[span_id] = {
                        "trace_id": hex_id(span["traceId"], 32),
                        "parent_span_id": hex_id(span["parentSpanId"], 16) if span.get("parentSpanId") else "",
                        "name": span["name"],
                        "flags": int(span.get("flags", 0)),
                        "kind": _enum(span.get("kind"), _KINDS, "SPAN_KIND_"),
                        "start_ns": int(span["startTimeUnixNano"]),
                        "end_ns": int(span["endTimeUnixNano"]),
                        "status": (_enum(status.get("code"), _STATUS, "STATUS_CODE_"), status.get("message", "")),
                        "attributes": attributes(span.get("attributes", [])),
                        "events": [
                            (int(e["timeUnixNano"]), e["name"], attributes(e.get("attributes", [])))
                            for e in span.get("events", [])
                        ],
                        "links": [
                            (hex_id(lk["traceId"], 32), hex_id(lk["spanId"], 16), attributes(lk.get("attributes", [])))
                            for lk in span.get("links", [])
                        ],
                        "scope": (scope.get("name", ""), scope.get("version", "")),
                        "resource": resource,
                    }
    return out


def _tags(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    out = {}
    for tag in items:
        value = tag["value"]
        out[tag["key"]] = int(value) if tag.get("type") == "int64" else value
    return out


def classic_facts(answer: Mapping[str, Any]) -> Facts:
    """Every span of a classic ``/api/traces/{id}`` answer, by span id, with timestamps in µs.

    What the classic model cannot hold stays as Jaeger gives it: arrays are JSON strings, links have
    no attributes; ``classic_view`` turns OTLP facts into the same shape for comparison.
    """
    out: Facts = {}
    for trace in answer["data"]:
        processes = trace["processes"]
        for span in trace["spans"]:
            process = processes[span["processID"]]
            tags = _tags(span.get("tags", []))
            refs = span.get("references", [])
            parents = [r for r in refs if r["refType"] == "CHILD_OF"]
            kind = str(tags.get("span.kind", "internal")).upper()
            status_code = str(tags.get("otel.status_code", "UNSET")).upper()
            resource = {"service.name": process["serviceName"], **_tags(process.get("tags", []))}
            out[hex_id(span["spanID"], 16)] = {
                "trace_id": hex_id(span["traceID"], 32),
                "parent_span_id": hex_id(parents[0]["spanID"], 16) if parents else "",
                "name": span["operationName"],
                "kind": _KINDS[kind],
                "start_us": int(span["startTime"]),
                "end_us": int(span["startTime"]) + int(span["duration"]),
                "status": (_STATUS[status_code], tags.get("otel.status_description", "")),
                "attributes": {k: v for k, v in tags.items() if k not in _CLASSIC_FIELD_TAGS},
                "events": [_classic_event(log) for log in span.get("logs", [])],
                "links": [
                    (hex_id(r["traceID"], 32), hex_id(r["spanID"], 16), {})
                    for r in refs
                    if r["refType"] == "FOLLOWS_FROM"
                ],
                "scope": (tags.get("otel.scope.name", ""), tags.get("otel.scope.version", "")),
                "resource": resource,
            }
    return out


def _classic_event(log: Mapping[str, Any]) -> tuple[int, str, dict[str, Any]]:
    fields = _tags(log.get("fields", []))
    name = fields.pop("event", "")
    return int(log["timestamp"]), str(name), fields


def _flat(value: Any) -> Any:
    if isinstance(value, list):
        return orjson.dumps(value).decode()
    return value


def classic_view(facts: Facts) -> Facts:
    """OTLP facts as Jaeger's classic JSON can hold them: µs timestamps, arrays as JSON, links bare, no flags."""
    out: Facts = {}
    for span_id, fact in facts.items():
        view = {k: v for k, v in fact.items() if k not in ("start_ns", "end_ns", "flags")}
        view["start_us"] = fact["start_ns"] // 1000
        view["end_us"] = fact["start_ns"] // 1000 + (fact["end_ns"] - fact["start_ns"]) // 1000  # start + duration
        view["attributes"] = {k: _flat(v) for k, v in fact["attributes"].items()}
        view["events"] = [(t // 1000, n, {k: _flat(v) for k, v in a.items()}) for t, n, a in fact["events"]]
        view["links"] = [(t, s, {}) for t, s, _ in fact["links"]]
        view["resource"] = {k: _flat(v) for k, v in fact["resource"].items()}
        out[span_id] = view
    return out


def differences(expected: Facts, got: Facts, *, ignore: Iterable[str] = ()) -> list[str]:
    """Every difference between two sets of span facts, one line each ("span ID (name): field: a → b")."""
    skip = set(ignore)
    found = [f"span {sid} is missing" for sid in sorted(set(expected) - set(got))]
    found += [f"span {sid} was not expected" for sid in sorted(set(got) - set(expected))]
    for sid in sorted(set(expected) & set(got)):
        want, have = expected[sid], got[sid]
        label = f"span {sid} ({want.get('name')})"
        for key in sorted(set(want) | set(have)):
            if key in skip or want.get(key) == have.get(key):
                continue
            if isinstance(want.get(key), dict) and isinstance(have.get(key), dict):
                inner_w, inner_h = want[key], have[key]
                for name in sorted(set(inner_w) | set(inner_h)):
                    if inner_w.get(name, "<absent>") != inner_h.get(name, "<absent>"):
                        found.append(
                            f"{label}: {key}[{name}]: {inner_w.get(name, '<absent>')!r} → "
                            f"{inner_h.get(name, '<absent>')!r}"
                        )
            else:
                found.append(f"{label}: {key}: {want.get(key)!r} → {have.get(key)!r}")
    return found


def read_jsonl(text: str) -> list[dict[str, Any]]:
    """The JSON documents of a JSON Lines text."""
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]
