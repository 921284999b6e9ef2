"""OTLP JSON, as tapes and the Collector write it, to and from OTLP protobuf messages.

OTLP JSON is protobuf's JSON mapping with two differences: trace and span ids are hex (protobuf
JSON writes bytes as base64) and enums are integers. ``traces_data`` reads either spelling of the
ids (Jaeger's ``/api/v3`` writes base64, tapes hex: the lengths tell them apart), so one reader
serves both; ``span_lines`` writes our tape format: one ``TracesData`` line per span, ids in hex,
64-bit integers as decimal strings.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, TracesData

from otel_agent_replay.tape import SpanDataError

__all__ = ["span_json", "span_lines", "strip_attributes", "traces_data"]

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
_is_hex = re.compile(r"[0-9a-fA-F]*").fullmatch


def _b64_of_hex(value: Any) -> Any:
    """A hex id (32 or 16 digits) as base64, as protobuf's JSON parser wants bytes; others unchanged."""
    if type(value) is str and len(value) in (32, 16) and _is_hex(value):
        return base64.b64encode(bytes.fromhex(value)).decode("ascii")
    return value


def _hex_of_b64(value: Any) -> Any:
    if type(value) is str and value:
        return base64.b64decode(value).hex()
    return value


def _with_ids(span: dict[str, Any], convert: Any) -> dict[str, Any]:
    out = dict(span)
    for key in _ID_FIELDS:
        if key in out:
            out[key] = convert(out[key])
    links = out.get("links")
    if links:
        out["links"] = [_with_ids(link, convert) for link in links]
    return out


def _map_spans(doc: dict[str, Any], convert: Any) -> dict[str, Any]:
    """A copy of a ``TracesData`` JSON object with every span and link id passed through ``convert``."""
    resource_spans = []
    for rs in doc.get("resourceSpans") or ():
        scope_spans = []
        for ss in rs.get("scopeSpans") or ():
            scope_spans.append({**ss, "spans": [_with_ids(span, convert) for span in ss.get("spans") or ()]})
        resource_spans.append({**rs, "scopeSpans": scope_spans})
    return {**doc, "resourceSpans": resource_spans}


def traces_data(doc: dict[str, Any]) -> TracesData:
    """A ``TracesData`` message from OTLP JSON (hex ids) or protobuf JSON (base64 ids, enum names).

    Raises ``SpanDataError`` naming what protobuf refused.
    """
    message = TracesData()
    try:
        ParseDict(_map_spans(doc, _b64_of_hex), message, ignore_unknown_fields=True)
    except (ParseError, ValueError, TypeError, AttributeError) as exc:
        raise SpanDataError(
            f"not valid OTLP JSON ({exc}); a tape line is a TracesData object, see "
            f"https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding"
        ) from None
    return message


def span_json(span: Span) -> dict[str, Any]:
    """One protobuf span as OTLP JSON: hex ids, enums as integers, 64-bit integers as strings."""
    return _with_ids(MessageToDict(span, use_integers_for_enums=True), _hex_of_b64)


def span_lines(message: TracesData) -> Iterator[tuple[Span, bytes]]:
    """Each span of a message with its tape line: one ``TracesData`` object and ``\\n``."""
    for rs in message.resource_spans:
        frame = _frame(rs)
        for ss in rs.scope_spans:
            scope = _scope(ss)
            for span in ss.spans:
                line = {"resourceSpans": [{**frame, "scopeSpans": [{**scope, "spans": [span_json(span)]}]}]}
                yield span, orjson.dumps(line) + b"\n"


def _frame(rs: ResourceSpans) -> dict[str, Any]:
    out: dict[str, Any] = {"resource": MessageToDict(rs.resource, use_integers_for_enums=True)}
    if rs.schema_url:
        out["schemaUrl"] = rs.schema_url
    return out


def _scope(ss: ScopeSpans) -> dict[str, Any]:
    out: dict[str, Any] = {"scope": MessageToDict(ss.scope, use_integers_for_enums=True)}
    if ss.schema_url:
        out["schemaUrl"] = ss.schema_url
    return out


def strip_attributes(doc: dict[str, Any], keys: frozenset[str]) -> tuple[dict[str, Any], int]:
    """A copy of OTLP JSON without the span attributes named in ``keys``, and how many spans lost some."""
    touched = 0

    def strip(span: dict[str, Any]) -> dict[str, Any]:
        nonlocal touched
        attrs = span.get("attributes")
        if not attrs or not any(kv.get("key") in keys for kv in attrs):
            return span
        touched += 1
        return {**span, "attributes": [kv for kv in attrs if kv.get("key") not in keys]}

    out = _map_spans(doc, lambda value: value)
    for rs in out["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [strip(span) for span in ss["spans"]]
    return out, touched
