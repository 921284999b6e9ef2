"""A span's values through the redactor, one way for every reader: capture's, ``check``'s and every command
that reads a tape written elsewhere.

Recording redacts a value before it reaches a span; a tape another tool wrote (the OpenTelemetry SDK's
own exporter, hand-written OTLP JSON, a Collector's file, a Jaeger download) carries whatever its spans
were given. ``clean_attribute(redactor, key, value)`` is what an attribute value becomes on the way in:
the whole value under a secret key (``KEY_PLACEHOLDER``), a string through ``Redactor.redact_attribute``
(a string holding JSON is redacted as data; a key naming an identifier keeps its value from the
high-entropy layer), bytes as their text, arrays and key-value lists item by item, and a recorded
HTTP stream as its assembled text (``conversation.redact_stream``). The application's own spans at
capture (``recorder``), ``pull`` and ``push`` (``backends``), ``show``, ``diff``, ``ingest`` and
``report`` (``load_tape(path, redactor=...)``) and ``check`` all call it, so ``check`` flags exactly
what the others would remove. Redaction is idempotent: a tape recorded by otel-agent-replay (redacted
already) reads the same.
"""

from __future__ import annotations

from typing import Any

import orjson

from otel_agent_replay.capture import KEY_PLACEHOLDER, Redactor

from ._span import SpanRecord
from ._values import StepError

_JSON_STARTS = ("{", "[", '"')
_JSON_ENDS = ("}", "]", '"')

__all__ = ["clean_attribute", "clean_attributes", "clean_string", "clean_text", "redact_record"]


def clean_text(redactor: Redactor, text: str) -> str:
    """A name or a message (span, event, scope, status): every secret in it redacted."""
    return redactor.redact_text(text) if text else text


def clean_string(redactor: Redactor, key: str, text: str) -> str:
    """A string attribute value under ``key``, redacted (JSON as data, a recorded stream as its text)."""
    if text[:1] in _JSON_STARTS and text[-1:] in _JSON_ENDS:  # JSON (a step's arguments, result …): as data
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, (dict, list, str)):
            # Loaded here: reading a tape without a redactor (load_tape) needs no conversation readers.
            from otel_agent_replay.conversation import redact_stream

            cleaned: Any = redactor(data) if redactor.may_redact(text) else data
            cleaned = redact_stream(cleaned, redactor.redact_text)
            return text if cleaned == data else orjson.dumps(cleaned).decode("utf-8")
    cleaned = redactor.redact_attribute(key, text) if key else redactor(text)
    return cleaned if isinstance(cleaned, str) else orjson.dumps(cleaned).decode("utf-8")


def clean_attribute(redactor: Redactor, key: str, value: Any) -> Any:
    """One attribute value (a span's, an event's, a link's, a resource's) as it may be read or recorded;
    ``value`` itself when nothing in it is a secret. Arrays come back as the type they came in."""
    if value is None:
        return None
    if key and redactor.is_secret_key(key):
        return KEY_PLACEHOLDER
    if isinstance(value, str):
        return clean_string(redactor, key, value)
    if isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
        cleaned = clean_string(redactor, key, text)
        return value if cleaned == text else cleaned.encode("utf-8")
    if isinstance(value, (list, tuple)):
        items = [clean_attribute(redactor, "", item) for item in value]
        if items == list(value):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        out = {clean_text(redactor, str(k)): clean_attribute(redactor, str(k), v) for k, v in value.items()}
        return value if out == value else out
    return value


def clean_attributes(redactor: Redactor, attributes: dict[str, Any]) -> dict[str, Any]:
    """A span's attribute dict, keys and values redacted (itself when clean)."""
    out: dict[str, Any] = {}
    changed = False
    for key, value in attributes.items():
        clean_key = clean_text(redactor, key)
        clean = clean_attribute(redactor, key, value)
        changed = changed or clean_key != key or clean != value
        out[clean_key] = clean
    return out if changed else attributes


def redact_record(record: SpanRecord, redactor: Redactor) -> SpanRecord:
    """``record`` with its name, attribute keys and values and its error redacted, in place."""
    record.name = clean_text(redactor, record.name)
    record.attributes = clean_attributes(redactor, record.attributes)
    error = record.error
    if error is not None:
        kind, message = clean_text(redactor, error.type), clean_text(redactor, error.message)
        if (kind, message) != (error.type, error.message):
            record.error = StepError(kind, message)
    return record
