"""Direct OTLP JSON encoding of SDK spans, one ``TracesData`` line per span.

The output follows the OTLP JSON rules (hex ids, 64-bit integers as decimal strings,
enums as integers) and decodes to the same message as OpenTelemetry's own
OTLP JSON encoder; building plain dicts and dumping them with orjson costs about a
third as much as going through the generated message classes, and the resource and
scope part of a line is encoded once per (resource, scope) pair.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext

_FLAGS_HAS_IS_REMOTE = 0x100
_FLAGS_IS_REMOTE = 0x200


def _double(value: float) -> Any:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def encode_value(value: object) -> dict[str, Any]:
    """One attribute value as an OTLP JSON ``AnyValue``."""
    kind = type(value)
    if kind is str:
        return {"stringValue": value}
    if kind is bool:
        return {"boolValue": value}
    if kind is int:
        return {"intValue": str(value)}
    if kind is float:
        return {"doubleValue": _double(value)}  # type: ignore[arg-type]
    if value is None:
        return {}
    if isinstance(value, (bytes, bytearray)):
        import base64

        return {"bytesValue": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, str):
        return {"stringValue": str(value)}
    if isinstance(value, bool):
        return {"boolValue": bool(value)}
    if isinstance(value, int):
        return {"intValue": str(int(value))}
    if isinstance(value, float):
        return {"doubleValue": _double(float(value))}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": encode_attributes(value)}}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [encode_value(v) for v in value]}}
    return {"stringValue": str(value)}


def encode_attributes(attributes: Mapping[str, object] | None) -> list[dict[str, Any]]:
    """Attributes as OTLP JSON ``KeyValue`` objects, in their order."""
    if not attributes:
        return []
    return [{"key": key, "value": encode_value(value)} for key, value in attributes.items()]


def _flags(parent: SpanContext | None) -> int:
    if parent is not None and parent.is_remote:
        return _FLAGS_HAS_IS_REMOTE | _FLAGS_IS_REMOTE
    return _FLAGS_HAS_IS_REMOTE


def _attributes_of(span: ReadableSpan) -> Mapping[str, Any] | None:
    """The span's attributes as a plain dict when the SDK keeps them so, else as its public mapping.

    ``ReadableSpan.attributes`` wraps the SDK's ``BoundedAttributes`` in a ``MappingProxyType``, so each
    item read goes through two Python-level mapping layers (``__iter__`` under its lock, ``__getitem__``); an
    ended span's attributes no longer change, and the dict inside holds the same items in the same order.
    Any other layout (another SDK version, a span built by hand) is read through the public property.
    """
    raw = getattr(span, "_attributes", None)
    if type(raw) is BoundedAttributes:
        inner = getattr(raw, "_dict", None)
        if type(inner) is dict:
            return inner
    elif type(raw) is dict:
        return raw
    return span.attributes


def _lists_of(span: ReadableSpan) -> tuple[Sequence[Event], Sequence[Link], int, int, int]:
    """The span's events and links, and its dropped attribute, event and link counts.

    The SDK's properties copy each list under its lock (``tuple(BoundedList)``) and test each count's holder
    with ``isinstance``: five Python-level calls, most of them for lists an ended step's span holds empty. An
    ended span's lists no longer change, so the deques inside are read as they are; any other layout (another
    SDK version, a span built by hand) is read through the public properties.
    """
    events, links = getattr(span, "_events", None), getattr(span, "_links", None)
    attrs = getattr(span, "_attributes", None)
    if type(events) is BoundedList and type(links) is BoundedList and type(attrs) is BoundedAttributes:
        event_items, link_items = getattr(events, "_dq", None), getattr(links, "_dq", None)
        if type(event_items) is deque and type(link_items) is deque:
            return event_items, link_items, attrs.dropped, events.dropped, links.dropped
    return span.events, span.links, span.dropped_attributes, span.dropped_events, span.dropped_links


def encode_span(span: ReadableSpan) -> dict[str, Any]:
    """One SDK span as an OTLP JSON ``Span`` object."""
    ctx = span.get_span_context()
    assert ctx is not None  # an SDK span always has one
    out: dict[str, Any] = {"traceId": f"{ctx.trace_id:032x}", "spanId": f"{ctx.span_id:016x}"}
    if ctx.trace_state:
        out["traceState"] = ",".join(f"{k}={v}" for k, v in ctx.trace_state.items())
    parent = span.parent
    if parent is not None:
        out["parentSpanId"] = f"{parent.span_id:016x}"
    out["flags"] = _flags(parent)
    out["name"] = span.name
    out["kind"] = span.kind.value + 1  # SDK INTERNAL=0 is OTLP SPAN_KIND_INTERNAL=1
    out["startTimeUnixNano"] = str(span.start_time or 0)
    out["endTimeUnixNano"] = str(span.end_time or 0)
    attributes = _attributes_of(span)
    span_events, span_links, dropped_attributes, dropped_events, dropped_links = _lists_of(span)
    if attributes:
        # text is most of a step's attributes: its AnyValue is built inline, the rest by encode_value
        out["attributes"] = [
            {"key": k, "value": {"stringValue": v} if type(v) is str else encode_value(v)}
            for k, v in attributes.items()
        ]
    if dropped_attributes:
        out["droppedAttributesCount"] = dropped_attributes
    if span_events:
        events = []
        for event in span_events:
            item: dict[str, Any] = {"timeUnixNano": str(event.timestamp), "name": event.name}
            if event.attributes:
                item["attributes"] = encode_attributes(event.attributes)
            if event.dropped_attributes:
                item["droppedAttributesCount"] = event.dropped_attributes
            events.append(item)
        out["events"] = events
    if dropped_events:
        out["droppedEventsCount"] = dropped_events
    if span_links:
        links = []
        for link in span_links:
            item = {
                "traceId": f"{link.context.trace_id:032x}",
                "spanId": f"{link.context.span_id:016x}",
                "flags": _flags(link.context),
            }
            if link.context.trace_state:
                item["traceState"] = ",".join(f"{k}={v}" for k, v in link.context.trace_state.items())
            if link.attributes:
                item["attributes"] = encode_attributes(link.attributes)
            if link.dropped_attributes:
                item["droppedAttributesCount"] = link.dropped_attributes
            links.append(item)
        out["links"] = links
    if dropped_links:
        out["droppedLinksCount"] = dropped_links
    status: dict[str, Any] = {}
    span_status = span.status
    if span_status.description:
        status["message"] = span_status.description
    if span_status.status_code.value:
        status["code"] = span_status.status_code.value
    out["status"] = status
    return out


def _resource_obj(resource: Resource) -> dict[str, Any]:
    return {"attributes": encode_attributes(resource.attributes)} if resource.attributes else {}


def _scope_obj(scope: InstrumentationScope | None) -> dict[str, Any]:
    if scope is None:
        return {}
    out: dict[str, Any] = {"name": scope.name}
    if scope.version:
        out["version"] = scope.version
    if scope.attributes:
        out["attributes"] = encode_attributes(scope.attributes)
    return out


_MARK = "\x00span\x00"


class LineEncoder:
    """Encodes spans as OTLP JSON Lines, caching each (resource, scope) frame.

    Thread-safe: the cache is filled under a lock, read without one.
    """

    def __init__(self) -> None:
        self._frames: dict[tuple[int, int], tuple[object, object, bytes, bytes]] = {}
        self._lock = threading.Lock()

    def _frame(self, resource: Resource, scope: InstrumentationScope | None) -> tuple[bytes, bytes]:
        key = (id(resource), id(scope))
        hit = self._frames.get(key)
        if hit is not None and hit[0] is resource and hit[1] is scope:
            return hit[2], hit[3]
        scope_spans: dict[str, Any] = {"scope": _scope_obj(scope), "spans": [_MARK]}
        if scope is not None and scope.schema_url:
            scope_spans["schemaUrl"] = scope.schema_url
        resource_spans: dict[str, Any] = {"resource": _resource_obj(resource), "scopeSpans": [scope_spans]}
        if resource.schema_url:
            resource_spans["schemaUrl"] = resource.schema_url
        text = orjson.dumps({"resourceSpans": [resource_spans]})
        head, tail = text.split(orjson.dumps(_MARK), 1)
        with self._lock:
            if len(self._frames) > 64:
                self._frames.clear()
            self._frames[key] = (resource, scope, head, tail + b"\n")
        return head, tail + b"\n"

    def encode(self, span: ReadableSpan) -> bytes:
        """One span as one complete OTLP JSON line, ending in ``\\n``."""
        head, tail = self._frame(span.resource, span.instrumentation_scope)
        return head + orjson.dumps(encode_span(span)) + tail
