"""The user's own spans inside a recorded run: redacted before they reach the tape or OTLP.

Spans of the SDK's own instrumentation are redacted as they are made; a span the application
(or a library it uses) starts under a recorded run carries whatever it was given: headers,
URLs with tokens, exception messages. The router hands every span of a recorded run to its
recording, so this is the one place to redact them: attribute values (under a secret key, the
whole value), event and link attributes, the status description, the span name. The resource
(every span's, the SDK's own too) is redacted here as well, once per resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link, Status

from otel_agent_replay.capture import Redactor
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import clean_attribute


def is_ours(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name == A.INSTRUMENTATION_NAME


def is_run_span(span: ReadableSpan) -> bool:
    """A run span: the SDK makes it, but the application may set attributes on it while it is current."""
    attrs = span.attributes
    return attrs is not None and attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT


def _value(redactor: Redactor, key: str, value: Any) -> Any:
    # the one rule for an attribute value, which ``check``, ``pull``, ``push`` and ``show`` use too
    cleaned = clean_attribute(redactor, key, value)
    return tuple(cleaned) if isinstance(cleaned, list) else cleaned


def _attributes(redactor: Redactor, attrs: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, bool]:
    if not attrs:
        return None if attrs is None else dict(attrs), False
    out: dict[str, Any] = {}
    changed = False
    for key, value in attrs.items():
        redacted = _value(redactor, key, value)
        clean_key = redactor.redact_text(key)
        changed = changed or redacted != value or clean_key != key
        out[clean_key] = redacted
    return out, changed


def redacted_span(span: ReadableSpan, redactor: Redactor) -> ReadableSpan:
    """``span`` with its attributes, events, status description and name redacted (itself when clean)."""
    attrs, changed = _attributes(redactor, span.attributes)
    events: list[Event] = []
    for event in span.events:
        event_attrs, event_changed = _attributes(redactor, event.attributes)
        event_name = redactor.redact_text(event.name)
        event_changed = event_changed or event_name != event.name
        changed = changed or event_changed
        events.append(Event(event_name, event_attrs, event.timestamp) if event_changed else event)
    status = span.status
    description = status.description
    if description:
        clean = redactor.redact_text(description)
        if clean != description:
            status = Status(status.status_code, clean)
            changed = True
    name = redactor.redact_text(span.name)
    links: list[Link] = []
    for link in span.links:
        link_attrs, link_changed = _attributes(redactor, link.attributes)
        changed = changed or link_changed
        links.append(Link(link.context, link_attrs) if link_changed else link)
    if not changed and name == span.name:
        return span
    from otel_agent_replay.backends import span_with  # here: loading the OTLP side only when a span changes

    return span_with(span, name=name, attributes=attrs, events=events, links=links, status=status)


class ResourceRedaction:
    """The resource's attributes redacted, once per resource: a provider's resource is one object
    (``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SERVICE_NAME``, the application's ``Resource``), so only
    a resource with something to redact costs anything per span."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._seen: dict[int, tuple[Resource, Resource]] = {}

    def clean(self, resource: Resource) -> Resource:
        """``resource`` itself when it has nothing to redact, else a redacted copy (the same copy each time)."""
        hit = self._seen.get(id(resource))
        if hit is not None and hit[0] is resource:
            return hit[1]
        attrs, changed = _attributes(self._redactor, resource.attributes)
        clean = Resource(attrs or {}, resource.schema_url) if changed else resource
        if len(self._seen) > 16:
            self._seen.clear()
        self._seen[id(resource)] = (resource, clean)
        return clean

    def __call__(self, span: ReadableSpan) -> ReadableSpan:
        """``span`` itself, or a copy with its resource redacted."""
        resource = span.resource
        clean = self.clean(resource)
        if clean is resource:
            return span
        from otel_agent_replay.backends import span_with

        return span_with(span, resource=clean)
