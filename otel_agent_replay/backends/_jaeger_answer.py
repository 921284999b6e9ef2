"""What Jaeger's query API answers, as OTLP messages, redacted before they become a tape.

``v3_messages`` reads an ``/api/v3`` answer (``{"result": TracesData}`` in protobuf JSON, one
object or one per line when streamed; ids in base64); ``classic_messages`` reads the classic
``{"data": [trace, ...]}`` through ``jaeger_otlp``. An answer of another shape is an
``EndpointError`` that says which URL gave it.

Recording redacts a value before it reaches a span; a trace exported by someone else may carry
secrets anywhere. ``redact_traces`` walks every attribute of a ``TracesData`` message (spans,
events, links, resources, scopes; keys and values, bytes too), the names of spans, events and
scopes, trace states and the status messages, in place: a string that
holds a JSON object or array is parsed and redacted as data (secret keys and secret-looking
values, like captured arguments), any other string by the value patterns alone
(``Redactor.redact_text``). Redaction is idempotent, so spans recorded by otel-agent-replay
(already redacted) come through unchanged and keep their call keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_agent_replay.capture import KEY_PLACEHOLDER, Redactor
from otel_agent_replay.core import EndpointError
from otel_agent_replay.tape import DECODE_ERRORS, decode_problem, otlp_from_jaeger

from ._http import Response
from ._otlp_json import traces_data

__all__ = ["classic_messages", "redact_string", "redact_traces", "v3_messages"]


def _json_values(got: Response) -> Iterable[Any]:
    """The JSON value of an answer, or each line of a streamed one."""
    try:
        return [orjson.loads(got.body)]
    except orjson.JSONDecodeError:
        pass
    try:
        return [orjson.loads(line) for line in got.body.splitlines() if line.strip()]
    except orjson.JSONDecodeError as exc:
        raise EndpointError(f"pull: {got.url} did not answer JSON ({exc}): {got.excerpt()}") from None


def v3_messages(got: Response) -> Iterator[TracesData]:
    """The ``TracesData`` messages of an ``/api/v3`` answer (``{"result": ...}``, maybe one per line)."""
    for value in _json_values(got):
        result = value.get("result") if isinstance(value, dict) else None
        if not isinstance(result, dict):
            raise EndpointError(f'pull: {got.url} answered without a "result" (not Jaeger api/v3?): {got.excerpt()}')
        try:
            yield traces_data(result)
        except DECODE_ERRORS as exc:
            problem = decode_problem(exc, "is this a Jaeger query service?")
            raise EndpointError(f"pull: {got.url}: {problem}") from None


def classic_messages(got: Response) -> Iterator[TracesData]:
    """The traces of a classic ``/api/traces`` answer (``{"data": [...]}``), one message per trace."""
    for value in _json_values(got):
        data = value.get("data") if isinstance(value, dict) else None
        if not isinstance(data, list):
            raise EndpointError(f'pull: {got.url} answered without "data" (not Jaeger\'s API?): {got.excerpt()}')
        for trace in data:
            try:
                yield traces_data(otlp_from_jaeger(trace))
            except DECODE_ERRORS as exc:
                problem = decode_problem(exc, "is this a Jaeger query service?")
                raise EndpointError(f"pull: {got.url}: {problem}") from None


def redact_string(text: str, redactor: Redactor, key: str = "") -> str:
    """A string attribute value (under ``key``), redacted: JSON data as data, other text by the value
    patterns (an identifier's key keeps it from the high-entropy layer: ``Redactor.redact_text``)."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            return redactor.redact_text(text, key)
        if not redactor.may_redact(text):
            return text
        cleaned = redactor(data)
        return text if cleaned == data else orjson.dumps(cleaned).decode("utf-8")
    return redactor.redact_text(text, key)


def _text(text: str, redactor: Redactor) -> str:
    return redactor.redact_text(text) if text else text


def redact_traces(message: TracesData, redactor: Redactor) -> int:
    """Redact, in place, everything of ``message`` that holds text: attribute keys and values (strings,
    bytes, arrays, key/value lists), span, event and scope names, scope versions, trace states and status
    messages, of resources, scopes, spans, events and links. Returns how many values changed."""
    changed = 0
    for rs in message.resource_spans:
        changed += _attributes(rs.resource.attributes, redactor)
        for ss in rs.scope_spans:
            changed += _attributes(ss.scope.attributes, redactor)
            changed += _fields(ss.scope, ("name", "version"), redactor)
            for span in ss.spans:
                changed += _attributes(span.attributes, redactor)
                changed += _fields(span, ("name", "trace_state"), redactor)
                for event in span.events:
                    changed += _attributes(event.attributes, redactor)
                    changed += _fields(event, ("name",), redactor)
                for link in span.links:
                    changed += _attributes(link.attributes, redactor)
                    changed += _fields(link, ("trace_state",), redactor)
                changed += _fields(span.status, ("message",), redactor)
    return changed


def _fields(message: Any, names: tuple[str, ...], redactor: Redactor) -> int:
    changed = 0
    for name in names:
        text = getattr(message, name)
        cleaned = _text(text, redactor)
        if cleaned != text:
            setattr(message, name, cleaned)
            changed += 1
    return changed


def _attributes(items: Iterable[KeyValue], redactor: Redactor) -> int:
    changed = 0
    for kv in items:
        key = kv.key
        if redactor.is_secret_key(key):
            if kv.value.WhichOneof("value") is not None and kv.value.string_value != KEY_PLACEHOLDER:
                kv.value.Clear()
                kv.value.string_value = KEY_PLACEHOLDER
                changed += 1
        else:
            changed += _value(kv.value, redactor, key)
        cleaned = _text(key, redactor)
        if cleaned != key:
            kv.key = cleaned
            changed += 1
    return changed


def _value(value: AnyValue, redactor: Redactor, key: str = "") -> int:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        cleaned = redact_string(value.string_value, redactor, key)
        if cleaned != value.string_value:
            value.string_value = cleaned
            return 1
        return 0
    if kind == "bytes_value":
        try:
            text = value.bytes_value.decode("utf-8")
        except UnicodeDecodeError:
            return 0  # binary data: no text to redact
        cleaned = redact_string(text, redactor, key)
        if cleaned != text:
            value.bytes_value = cleaned.encode("utf-8")
            return 1
        return 0
    if kind == "array_value":
        return sum(_value(item, redactor) for item in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values, redactor)
    return 0
