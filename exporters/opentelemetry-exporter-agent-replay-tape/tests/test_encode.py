"""The direct encoder produces the same OTLP JSON message as OpenTelemetry's own encoder."""

from __future__ import annotations

import orjson
import pytest
from opentelemetry.exporter.agent_replay_tape import LineEncoder
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.proto_json.trace.v1.trace import TracesData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)


def _spans() -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "enc", "deployment": "test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("enc-test", "1.2.3", schema_url="https://opentelemetry.io/schemas/1.28.0")
    remote = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(1),
        trace_state=TraceState([("vendor", "x1")]),
    )
    with tracer.start_as_current_span("root", context=set_span_in_context(NonRecordingSpan(remote))) as root:
        root.set_attribute("s", 'text with ünïcode and "quotes"\n')
        with tracer.start_as_current_span(
            "child",
            kind=SpanKind.CLIENT,
            attributes={"i": 2**62, "neg": -7, "b": False, "f": 0.1, "ls": ["a", "b"], "li": [1, 2], "lf": [1.5]},
            links=[Link(remote, {"link.attr": "v"})],
        ) as child:
            child.add_event("exception", {"exception.type": "ValueError", "exception.message": "boom"})
            child.add_event("plain")
            child.set_status(Status(StatusCode.ERROR, "boom"))
        with tracer.start_as_current_span("ok", kind=SpanKind.SERVER) as ok:
            ok.set_status(Status(StatusCode.OK))
    return list(memory.get_finished_spans())


def _normal(doc: dict[str, object]) -> dict[str, object]:
    return TracesData.from_dict(doc).to_dict()


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_line_decodes_to_the_same_message_as_the_otel_encoder(index: int) -> None:
    span = _spans()[index]
    ours = orjson.loads(LineEncoder().encode(span))
    theirs = encode_spans([span]).to_dict()
    # One deliberate addition: a link's trace state, which OTLP carries and OTel's encoder leaves out.
    for link in ours["resourceSpans"][0]["scopeSpans"][0]["spans"][0].get("links", []):
        assert link.pop("traceState") == "vendor=x1"
    assert _normal(ours) == _normal(theirs)


def test_line_is_one_span_with_otlp_json_rules() -> None:
    spans = _spans()
    line = LineEncoder().encode(spans[0])
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    doc = orjson.loads(line)
    (rs,) = doc["resourceSpans"]
    (ss,) = rs["scopeSpans"]
    (span,) = ss["spans"]
    assert ss["scope"] == {"name": "enc-test", "version": "1.2.3"}
    assert ss["schemaUrl"] == "https://opentelemetry.io/schemas/1.28.0"
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16)
    assert len(span["spanId"]) == 16 and len(span["parentSpanId"]) == 16
    assert isinstance(span["startTimeUnixNano"], str) and int(span["startTimeUnixNano"]) > 0
    assert span["kind"] == 3  # SPAN_KIND_CLIENT as an integer
    attrs = {a["key"]: a["value"] for a in span["attributes"]}
    assert attrs["i"] == {"intValue": str(2**62)}
    assert attrs["b"] == {"boolValue": False}
    assert span["status"] == {"code": 2, "message": "boom"}
    assert span["links"][0]["traceState"] == "vendor=x1"


def test_resource_frame_is_reused_and_stays_correct() -> None:
    spans = _spans()
    encoder = LineEncoder()
    first = [orjson.loads(encoder.encode(s)) for s in spans]
    second = [orjson.loads(encoder.encode(s)) for s in spans]
    assert first == second
    assert {a["key"] for a in first[0]["resourceSpans"][0]["resource"]["attributes"]} >= {"service.name", "deployment"}


def test_remote_parent_sets_the_is_remote_flag() -> None:
    root = next(s for s in _spans() if s.name == "root")
    doc = orjson.loads(LineEncoder().encode(root))
    assert doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["flags"] == 0x300


def test_attributes_are_read_from_the_sdks_dict_and_any_other_layout_the_same() -> None:
    from types import MappingProxyType

    from opentelemetry.exporter.agent_replay_tape._encode import _attributes_of

    child = next(s for s in _spans() if s.name == "child")
    inner = _attributes_of(child)
    assert type(inner) is dict  # this SDK keeps them in a dict: read directly, not through two mapping layers
    assert list(inner.items()) == list(child.attributes.items())
    expected = orjson.loads(LineEncoder().encode(child))
    for attributes in (dict(child.attributes), MappingProxyType(dict(child.attributes))):
        copy = ReadableSpan(
            name=child.name,
            context=child.context,
            parent=child.parent,
            resource=child.resource,
            attributes=attributes,
            events=child.events,
            links=child.links,
            kind=child.kind,
            status=child.status,
            start_time=child.start_time,
            end_time=child.end_time,
            instrumentation_scope=child.instrumentation_scope,
        )
        assert orjson.loads(LineEncoder().encode(copy)) == expected


def test_events_links_and_dropped_counts_are_read_from_the_sdks_lists_and_any_other_layout_the_same() -> None:
    from collections import deque

    from opentelemetry.exporter.agent_replay_tape._encode import _lists_of
    from opentelemetry.sdk.trace import SpanLimits

    memory = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_events=1, max_links=1, max_span_attributes=2))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    remote = SpanContext(trace_id=7, span_id=9, is_remote=True, trace_flags=TraceFlags(1))
    other = SpanContext(trace_id=8, span_id=10, is_remote=False, trace_flags=TraceFlags(1))
    with provider.get_tracer("limits").start_as_current_span(
        "full", attributes={"a": 1, "b": 2, "c": 3}, links=[Link(remote, {"l": "v"}), Link(other)]
    ) as span:
        span.add_event("first", {"e": 1})
        span.add_event("second")
    (ended,) = memory.get_finished_spans()
    events, links, dropped_attributes, dropped_events, dropped_links = _lists_of(ended)
    assert type(events) is deque and type(links) is deque  # this SDK's lists, read without a copy each
    assert (dropped_attributes, dropped_events, dropped_links) == (1, 1, 1)
    line = orjson.loads(LineEncoder().encode(ended))
    (encoded,) = line["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert (encoded["droppedAttributesCount"], encoded["droppedEventsCount"], encoded["droppedLinksCount"]) == (1, 1, 1)
    assert [e["name"] for e in encoded["events"]] == ["second"] and len(encoded["links"]) == 1
    # the same span with plain tuples (a span built by hand): the public properties, the same line but the counts
    copy = ReadableSpan(
        name=ended.name,
        context=ended.context,
        parent=ended.parent,
        resource=ended.resource,
        attributes=ended.attributes,
        events=ended.events,
        links=ended.links,
        kind=ended.kind,
        status=ended.status,
        start_time=ended.start_time,
        end_time=ended.end_time,
        instrumentation_scope=ended.instrumentation_scope,
    )
    for key in ("droppedAttributesCount", "droppedEventsCount", "droppedLinksCount"):
        del encoded[key]
    assert orjson.loads(LineEncoder().encode(copy)) == line
