"""What Jaeger's query API answers, as OTLP messages, redacted before they become a tape.

``v3_messages`` reads an ``/api/v3`` answer (``{"result": TracesData}`` in protobuf JSON, one
object or one per line when streamed; ids in base64); ``classic_messages`` reads the classic
``{"data": [trace, ...]}`` through ``jaeger_otlp``. An answer of another shape is an
``EndpointError`` that says which URL gave it.

Recording redacts a value before it reaches a span; a trace exported by someone else may carry
secrets anywhere. ``redact_traces`` walks every attribute of a ``TracesData`` message (spans,
events, links, resources, scopes; keys and values, bytes too), the names of spans, events and
scopes, trace states and the status messages, in place, each value by ``tape.clean_attribute``'s
rules (the ones capture, ``show`` and ``check`` use): a string that holds JSON is redacted as data
(secret keys and secret-looking values, like captured arguments; a recorded stream as its
assembled text), any other string by the detector. ``push`` sends a tape through the same walk and
``check`` reports what it would change. Redaction is idempotent, so spans recorded by
otel-agent-replay (already redacted) come through unchanged and keep their call keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_agent_replay.capture import KEY_PLACEHOLDER, Redactor
from otel_agent_replay.core import EndpointError
from otel_agent_replay.tape import DECODE_ERRORS, clean_string, clean_text, decode_problem, otlp_from_jaeger

from ._http import Response
from ._otlp_json import traces_data

__all__ = ["Report", "classic_messages", "redact_string", "redact_traces", "v3_messages"]


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
    """A string attribute value (under ``key``), redacted as capture redacts one (``tape.clean_string``):
    JSON as data, a recorded stream as its assembled text, other text by the detector."""
    return clean_string(redactor, key, text)


Report = Callable[[str, str, Any], None]
"""Told of each value redaction changed: (the span's name, redacted, or ""; where in it; the value before)."""


def redact_traces(message: TracesData, redactor: Redactor, report: Report | None = None) -> int:
    """Redact, in place, everything of ``message`` that holds text: attribute keys and values (strings,
    bytes, arrays, key/value lists), span, event and scope names, scope versions, trace states and status
    messages, of resources, scopes, spans, events and links. Returns how many values changed; ``report``
    (``check``) hears of each."""
    walk = _Walk(redactor, report)
    for rs in message.resource_spans:
        walk.attributes(rs.resource.attributes, "resource attribute {}")
        for ss in rs.scope_spans:
            walk.attributes(ss.scope.attributes, "scope attribute {}")
            walk.fields(ss.scope, {"name": "the scope name", "version": "the scope version"})
            for span in ss.spans:
                walk.span = clean_text(redactor, span.name)
                walk.fields(span, {"name": "the span name", "trace_state": "the trace state"})
                walk.attributes(span.attributes, "attribute {}")
                for event in span.events:
                    shown = clean_text(redactor, event.name)
                    walk.attributes(event.attributes, f"attribute {{}} of event {shown!r}")
                    walk.fields(event, {"name": "an event name"})
                for link in span.links:
                    walk.attributes(link.attributes, "attribute {} of a link")
                    walk.fields(link, {"trace_state": "the trace state of a link"})
                walk.fields(span.status, {"message": "the error message"})
                walk.span = ""
    return walk.changed


class _Walk:
    """One message's walk: the redactor, who hears of changes, and what changed so far."""

    def __init__(self, redactor: Redactor, report: Report | None) -> None:
        self.redactor = redactor
        self.report = report
        self.changed = 0
        self.span = ""

    def _changed(self, where: str, before: Any) -> None:
        self.changed += 1
        if self.report is not None:
            self.report(self.span, where, before)

    def fields(self, message: Any, names: dict[str, str]) -> None:
        for name, where in names.items():
            text = getattr(message, name)
            cleaned = clean_text(self.redactor, text)
            if cleaned != text:
                setattr(message, name, cleaned)
                self._changed(where, text)

    def attributes(self, items: Iterable[KeyValue], where: str) -> None:
        for kv in items:
            key = kv.key
            shown = clean_text(self.redactor, key)
            if self.redactor.is_secret_key(key):
                if kv.value.WhichOneof("value") is not None and kv.value.string_value != KEY_PLACEHOLDER:
                    before = _python(kv.value)
                    kv.value.Clear()
                    kv.value.string_value = KEY_PLACEHOLDER
                    self._changed(where.format(shown), {key: before})
            else:
                self.value(kv.value, key, where.format(shown))
            if shown != key:
                kv.key = shown
                self._changed(f"an attribute key ({shown})", key)

    def value(self, value: AnyValue, key: str, where: str) -> None:
        kind = value.WhichOneof("value")
        if kind == "string_value":
            cleaned = redact_string(value.string_value, self.redactor, key)
            if cleaned != value.string_value:
                before = value.string_value
                value.string_value = cleaned
                self._changed(where, before)
        elif kind == "bytes_value":
            try:
                text = value.bytes_value.decode("utf-8")
            except UnicodeDecodeError:
                return  # binary data: no text to redact
            cleaned = redact_string(text, self.redactor, key)
            if cleaned != text:
                value.bytes_value = cleaned.encode("utf-8")
                self._changed(where, text)
        elif kind == "array_value":
            for item in value.array_value.values:
                self.value(item, "", where)
        elif kind == "kvlist_value":
            self.attributes(value.kvlist_value.values, where + " → {}")


def _python(value: AnyValue) -> Any:
    """An AnyValue as plain data (for saying what a secret key held)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_python(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _python(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.decode("utf-8", "replace")
    return None if kind is None else getattr(value, kind)
