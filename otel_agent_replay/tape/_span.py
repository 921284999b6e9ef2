"""One OTLP JSON span → a ``SpanRecord``; the values and checks every span format shares.

OTLP JSON as the OpenTelemetry exporters write it (ids in hex, times as decimal strings) and as
protobuf JSON writes it (Jaeger's ``/api/v3``: ids in base64, enum names). Attribute values are
decoded from ``AnyValue`` (``intValue`` → ``int``, arrays → lists, key-value lists → dicts,
bytes → ``bytes``); a span whose status is ERROR gets a ``StepError`` from its last
``exception`` event. ``jaeger_decode`` does the same for Jaeger's JSON and uses the shared pieces
below. A problem is a ``SpanDataError``; the reader adds the file and line.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import sys
from dataclasses import dataclass
from typing import Any, Final

from otel_agent_replay.core.attributes import (
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    SCHEMA_VERSION_ATTR,
    SUPPORTED_SCHEMA_VERSIONS,
)

from ._strict_json import json_kind
from ._values import StepError

__all__ = [
    "DECODE_ERRORS",
    "ZERO_SPAN_ID",
    "KnownIds",
    "SpanDataError",
    "SpanRecord",
    "b64",
    "check_schema_version",
    "decode_double",
    "decode_problem",
    "drop_utf8_copies",
    "int_or_none",
    "is_any_hex",
    "otlp_records",
    "otlp_span",
    "step_error",
]

ZERO_SPAN_ID: Final = "0" * 16
"""The parent id of a root span, as some writers spell "no parent"."""
_STATUS_ERROR_CODES: Final = (2, "STATUS_CODE_ERROR")
_START: Final = "startTimeUnixNano"
_END: Final = "endTimeUnixNano"

_is_hex32 = re.compile(r"[0-9a-f]{32}").fullmatch
_is_hex16 = re.compile(r"[0-9a-f]{16}").fullmatch
is_any_hex = re.compile(r"[0-9a-fA-F]+").fullmatch
_is_int_text = re.compile(r"-?[0-9]+").fullmatch
_intern = sys.intern


@dataclass(slots=True)
class SpanRecord:
    """One span as read from any supported format: ids in lowercase hex, times in nanoseconds.

    ``attributes`` is the decoded attribute dict (``intValue`` → ``int``, arrays → lists,
    key-value lists → dicts, bytes → ``bytes``). ``error`` is set when the span's status is
    ERROR: the last ``exception`` event's type and message, or ``("", status message)``.
    ``line`` is the line of the file the span was read from (where it starts, in a document).
    """

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: StepError | None
    line: int


class SpanDataError(Exception):
    """A malformed span or envelope; the reader turns it into a TapeFormatError with path and line.

    ``has_fix`` says the message already ends with its fix.
    """

    def __init__(self, message: str, *, has_fix: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.has_fix = has_fix


DECODE_ERRORS: Final = (SpanDataError, KeyError, TypeError, AttributeError, ValueError, IndexError)
"""What decoding spans may raise: a problem we named, or span data of the wrong shape."""


def decode_problem(err: Exception, fix: str) -> str:
    """The message for one of ``DECODE_ERRORS``, ending with its fix."""
    if isinstance(err, SpanDataError):
        return err.message if err.has_fix else f"{err.message}; {fix}"
    return (
        f"malformed span data ({type(err).__name__}: {err}); spans must follow the OTLP JSON shape "
        f"(resourceSpans → scopeSpans → spans) or Jaeger's JSON shape; {fix}"
    )


# --- OTLP JSON -------------------------------------------------------------------


class KnownIds:
    """The trace ids and parent span ids already checked in one file, each mapped to its lowercase hex.

    A run's spans share one trace id and most steps one parent: a checked id is a dict look-up
    instead of a regular expression, and every span of the trace keeps the same ``str``. Only ids
    that passed the check are kept, so a span reads the same with or without it.
    """

    __slots__ = ("parents", "traces")

    def __init__(self) -> None:
        self.traces: dict[str, str] = {}
        self.parents: dict[str, str] = {}


def otlp_records(resource_spans: Any, line: int, known: KnownIds | None = None) -> list[SpanRecord]:
    """The spans of a parsed ``resourceSpans`` list."""
    if type(resource_spans) is not list:
        raise SpanDataError(f'"resourceSpans" must be a list, found {json_kind(resource_spans)}')
    out: list[SpanRecord] = []
    append = out.append
    for rs in resource_spans:
        for ss in rs.get("scopeSpans") or ():
            for span in ss.get("spans") or ():
                append(otlp_span(span, line, known))
    return out


def otlp_span(span: dict[str, Any], line: int, known: KnownIds | None = None) -> SpanRecord:
    """One parsed OTLP JSON span; ``known``: the ids this file's spans already passed (see ``KnownIds``)."""
    name = span.get("name", "")
    if type(name) is not str:
        name = str(name)
    trace_id = span.get("traceId")
    span_id = span.get("spanId")
    if not trace_id or not span_id:
        missing = "traceId" if not trace_id else "spanId"
        raise SpanDataError(
            f"span {name!r} has no {missing}: every OTLP span needs a traceId (32 hex digits) and a "
            f"spanId (16 hex digits)",
        )
    if known is not None and type(trace_id) is str:
        checked = known.traces.get(trace_id)
        if checked is None:
            checked = trace_id if _is_hex32(trace_id) else _otlp_id(trace_id, 16, "traceId", name)
            known.traces[trace_id] = checked
        trace_id = checked
    elif not (type(trace_id) is str and _is_hex32(trace_id)):
        trace_id = _otlp_id(trace_id, 16, "traceId", name)
    if not (type(span_id) is str and _is_hex16(span_id)):
        span_id = _otlp_id(span_id, 8, "spanId", name)
    parent = span.get("parentSpanId")
    if not parent:
        parent = ""
    elif known is not None and type(parent) is str:
        checked = known.parents.get(parent)
        if checked is None:
            checked = parent if _is_hex16(parent) else _otlp_id(parent, 8, "parentSpanId", name)
            known.parents[parent] = checked
        parent = checked
    elif not (type(parent) is str and _is_hex16(parent)):
        parent = _otlp_id(parent, 8, "parentSpanId", name)
    if parent == ZERO_SPAN_ID:
        parent = ""
    # _nanos inline for the common case (decimal text), the same checks in the same order
    start = span.get("startTimeUnixNano", 0)
    start_ns = int(start) if type(start) is str and start.isdigit() and start.isascii() else _nanos(start, _START, name)
    end = span.get("endTimeUnixNano", 0)
    end_ns = int(end) if type(end) is str and end.isdigit() and end.isascii() else _nanos(end, _END, name)
    attributes = _attributes(span.get("attributes"), name)
    error = None
    status = span.get("status")
    if status and status.get("code") in _STATUS_ERROR_CODES:
        error = _otlp_exception(span.get("events"), status.get("message"), name)
    if attributes.get(SCHEMA_VERSION_ATTR) is not None:
        check_schema_version(attributes, name)
    return SpanRecord(trace_id, span_id, parent, name, start_ns, end_ns, attributes, error, line)


def _otlp_id(value: Any, size: int, field: str, name: str) -> str:
    """An OTLP id: hex (OTLP/JSON) or base64 (protobuf JSON, as Jaeger's api/v3 writes it)."""
    if type(value) is str:
        if len(value) == 2 * size:
            if is_any_hex(value):
                return value.lower()
        else:
            decoded = b64(value)
            if decoded is not None and len(decoded) == size:
                return decoded.hex()
    raise SpanDataError(
        f"span {name!r}: {field} {value!r} is not {2 * size} hex digits (nor base64 of {size} bytes, "
        f"as Jaeger's api/v3 writes ids)",
    )


def _nanos(value: Any, field: str, name: str) -> int:
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)
    if type(value) is int and value >= 0:
        return value
    if value is None:
        return 0
    raise SpanDataError(
        f"span {name!r}: {field} {value!r} is not an integer (nanoseconds since the epoch, "
        f"written as a decimal string)",
    )


def _attributes(items: Any, where: str) -> dict[str, Any]:
    """Decode an OTLP ``[{"key": k, "value": AnyValue}]`` list into a dict."""
    out: dict[str, Any] = {}
    if not items:
        return out
    try:
        for kv in items:
            value = kv["value"]
            if "stringValue" in value:
                out[_intern(kv["key"])] = value["stringValue"]
            elif "intValue" in value:
                number = value["intValue"]
                if type(number) is str and number.isdigit() and number.isascii():
                    out[_intern(kv["key"])] = int(number)  # what _any_value makes of it, without its calls
                else:
                    out[_intern(kv["key"])] = _any_value(value, kv["key"], where)
            else:
                out[_intern(kv["key"])] = _any_value(value, kv["key"], where)
    except KeyError:
        out = _attributes_checked(items, where)
    if len(out) != len(items):
        seen: set[str] = set()
        for kv in items:
            if kv["key"] in seen:
                raise SpanDataError(f"span {where!r}: attribute {kv['key']!r} appears twice")
            seen.add(kv["key"])
    return out


def _attributes_checked(items: Any, where: str) -> dict[str, Any]:
    """The slow, careful twin of ``_attributes``: a missing value is None, a missing key an error."""
    out: dict[str, Any] = {}
    for kv in items:
        key = kv.get("key")
        if type(key) is not str:
            raise SpanDataError(f'span {where!r}: an attribute has no key (each is {{"key": ..., "value": ...}})')
        value = kv.get("value")
        out[_intern(key)] = None if value is None else _any_value(value, key, where)
    return out


def _any_value(value: dict[str, Any], key: str, where: str) -> Any:
    if "stringValue" in value:
        text = value["stringValue"]
        if type(text) is not str:
            raise SpanDataError(f"span {where!r}: attribute {key!r}: stringValue {text!r} is not a string")
        return _fresh(text)
    if "intValue" in value:
        number = int_or_none(value["intValue"])
        if number is None:
            raise SpanDataError(f"span {where!r}: attribute {key!r}: intValue {value['intValue']!r} is not an integer")
        return number
    if "boolValue" in value:
        flag = value["boolValue"]
        if type(flag) is bool:
            return flag
        raise SpanDataError(f"span {where!r}: attribute {key!r}: boolValue {flag!r} is not true or false")
    if "doubleValue" in value:
        return decode_double(value["doubleValue"], key, where)
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or ()
        return [None if item is None else _any_value(item, key, where) for item in items]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"), where)
    if "bytesValue" in value:
        data = value["bytesValue"]
        decoded = b64(data) if type(data) is str else None
        if decoded is None:
            raise SpanDataError(f"span {where!r}: attribute {key!r}: bytesValue is not base64")
        return decoded
    if not value:
        return None
    if type(value) is not dict:  # the `in` tests above also "work" on text and lists: say what it is
        raise SpanDataError(
            f"span {where!r}: attribute {key!r}: its value {str(value)[:60]!r} is not an OTLP AnyValue "
            '(an object such as {"stringValue": "..."} or {"intValue": "1"})'
        )
    raise SpanDataError(f"span {where!r}: attribute {key!r} has an unknown value type {sorted(value)}")


def _otlp_exception(events: Any, status_message: Any, where: str) -> StepError:
    if events:
        for event in reversed(events):
            if event.get("name") == EXCEPTION_EVENT:
                fields = _attributes(event.get("attributes"), where)
                return step_error(fields.get(EXCEPTION_TYPE), fields.get(EXCEPTION_MESSAGE), status_message)
    return step_error(None, None, status_message)


# --- shared by every span format -------------------------------------------------


def b64(text: str) -> bytes | None:
    """Strict base64 (standard or URL-safe alphabet, padding optional); None when it is not."""
    padded = text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def int_or_none(value: Any) -> int | None:
    """An integer, or the decimal text of one (as OTLP JSON writes 64-bit integers); else None."""
    if type(value) is int:
        return value
    if type(value) is str and _is_int_text(value):
        return int(value)
    return None


def decode_double(number: Any, key: str, where: str) -> Any:
    """A double attribute: a float, or the text protobuf JSON writes for a non-finite one."""
    if type(number) is float or type(number) is int:
        return float(number)
    if type(number) is str:
        # protobuf JSON writes non-finite doubles as strings; keep those as the text, never as NaN.
        try:
            parsed = float(number)
        except ValueError:
            pass
        else:
            return parsed if math.isfinite(parsed) else number
    raise SpanDataError(f"span {where!r}: attribute {key!r}: doubleValue {number!r} is not a number")


def step_error(exc_type: Any, message: Any, status_message: Any) -> StepError:
    """The error of a failed span: its exception's type and message, else the status message."""
    if message is None:
        message = status_message
    return StepError("" if exc_type is None else str(exc_type), "" if message is None else str(message))


def check_schema_version(attributes: dict[str, Any], name: str) -> None:
    """Refuse a span written in a schema version this version cannot read (none given is fine)."""
    version = attributes.get(SCHEMA_VERSION_ATTR)
    if version is not None and str(version) not in SUPPORTED_SCHEMA_VERSIONS:
        readable = ", ".join(sorted(SUPPORTED_SCHEMA_VERSIONS))
        raise SpanDataError(
            f"span {name!r} has {SCHEMA_VERSION_ATTR} {version!r}, which this version of "
            f"otel-agent-replay cannot read (it reads {readable}); upgrade otel-agent-replay, "
            f"or re-record the tape with this version",
            has_fix=True,
        )


def _fresh(text: str) -> str:
    """A copy of a string without the UTF-8 copy that ``orjson.dumps`` caches in non-ASCII strings.

    The reader's duplicate-key check serialises every parsed line, and orjson keeps the UTF-8 form
    of each non-ASCII ``str`` it writes inside that ``str``: kept, it would double a tape's memory.
    """
    return "".join((text, "")) if not text.isascii() else text


def drop_utf8_copies(records: list[SpanRecord]) -> None:
    """Replace the non-ASCII names and attribute strings of records by copies without a UTF-8 cache."""
    for record in records:
        attrs = record.attributes
        for key, value in attrs.items():
            if type(value) is str and not value.isascii():
                attrs[key] = _fresh(value)
        record.name = _fresh(record.name)
