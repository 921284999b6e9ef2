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

import re
from typing import Any, Final

import orjson

from otel_agent_replay.capture import KEY_PLACEHOLDER, Redactor
from otel_agent_replay.core import attributes as A

from ._span import SpanRecord
from ._values import StepError

_JSON_STARTS = ("{", "[", '"')
_JSON_ENDS = ("}", "]", '"')

# The tape's own structure: read without the user's processors (they see values only), and a value of its
# structural shape is kept as it is (a call key ``get_token:1f…`` is not ``token: <secret>``).
_DIGITS = re.compile(r"[0-9]{1,20}")
_HEX = re.compile(r"[0-9a-f]{1,64}")
_WORD = re.compile(r"[a-z_]{1,32}")
_WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{5,18}(?:Z|[+-][0-9]{2}:[0-9]{2})?")
_STRUCTURE: Final[dict[str, re.Pattern[str] | None]] = {
    A.SCHEMA_VERSION_ATTR: _DIGITS,
    A.SEQ: _DIGITS,
    A.MAX_STRING: _DIGITS,
    A.MAX_RESULT_BYTES: _DIGITS,
    A.REPETITION: _DIGITS,
    A.KIND: _WORD,
    A.SIDE_EFFECT: _WORD,
    A.MODE: _WORD,
    A.INPUT_HASH: _HEX,
    A.RESULT_SHA256: _HEX,
    A.RECORDED_AT: _WHEN,
    A.EXPIRES_AT: _WHEN,
    A.STEP_ID: None,
    A.PARENT_STEP_ID: None,
    A.RUN_ID: None,
    A.CALL_KEY: None,
    A.TARGET: None,
    A.STAND_INS: None,
    A.RESULT_STAND_INS: None,
    A.IMPLICIT_RUN: None,
    A.RESULT_TRUNCATED: None,
    A.SDK_VERSION: None,
    A.PYTHON_VERSION: None,
    A.KEY_IGNORE: None,
    A.STREAM_OFFSETS: None,
}
_CALL_KEY = re.compile(r"(.*):([0-9a-f]{12})")


def _structure(redactor: Redactor, key: str, value: Any) -> Any:
    """A structural attribute's value: kept when it has its shape, else redacted without processors."""
    plain = redactor.without_processors
    if not isinstance(value, str):
        return clean_attribute(plain, "", value) if isinstance(value, (bytes, list, tuple, dict)) else value
    shape = _STRUCTURE[key]
    if shape is not None and shape.fullmatch(value):
        return value
    if key == A.CALL_KEY:
        match = _CALL_KEY.fullmatch(value)
        if match is not None:  # the tool's name is scanned as a name, the hash is a hash
            tool = clean_text(plain, match.group(1))
            return value if tool == match.group(1) else f"{tool}:{match.group(2)}"
    return _clean_string(plain, key, value)


__all__ = ["clean_attribute", "clean_attributes", "clean_string", "clean_text", "redact_record"]


def clean_text(redactor: Redactor, text: str) -> str:
    """A name or a message (span, event, scope, status): every secret in it redacted."""
    return redactor.redact_text(text) if text else text


def clean_string(redactor: Redactor, key: str, text: str) -> str:
    """A string attribute value under ``key``, redacted (JSON as data, a recorded stream as its text)."""
    if key in _STRUCTURE:
        return str(_structure(redactor, key, text))
    return _clean_string(redactor, key, text)


def _clean_string(redactor: Redactor, key: str, text: str) -> str:
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
    if key in _STRUCTURE:
        return _structure(redactor, key, value)
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
