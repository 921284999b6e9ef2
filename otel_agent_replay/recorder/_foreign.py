"""The user's own spans inside a recorded run: redacted before they reach the tape or OTLP.

Spans of the SDK's own instrumentation are redacted as they are made; a span the application
(or a library it uses) starts under a recorded run carries whatever it was given: headers,
URLs with tokens, exception messages. The router hands every span of a recorded run to its
recording, so this is the one place to redact them: attribute values (under a secret key, the
whole value), event attributes, the status description, the span name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Status

from otel_agent_replay.capture import KEY_PLACEHOLDER, Redactor
from otel_agent_replay.core import attributes as A


def is_ours(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name == A.INSTRUMENTATION_NAME


def _value(redactor: Redactor, key: str, value: Any) -> Any:
    if value is None:
        return None
    if redactor.is_secret_key(key):
        return KEY_PLACEHOLDER
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
        redacted = redactor(text)
        return value if redacted == text else str(redacted).encode("utf-8")
    if isinstance(value, (list, tuple)):
        return tuple(_value(redactor, "", item) if item is not None else None for item in value)
    return value


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
        changed = changed or event_changed
        events.append(Event(event.name, event_attrs, event.timestamp) if event_changed else event)
    status = span.status
    description = status.description
    if description:
        clean = redactor.redact_text(description)
        if clean != description:
            status = Status(status.status_code, clean)
            changed = True
    name = redactor.redact_text(span.name)
    if not changed and name == span.name:
        return span
    links: Sequence[Any] = span.links
    return ReadableSpan(
        name=name,
        context=span.get_span_context(),
        parent=span.parent,
        resource=span.resource,
        attributes=attrs,
        events=events,
        links=links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
