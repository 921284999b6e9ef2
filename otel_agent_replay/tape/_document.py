"""The spans of one large JSON text (OTLP or Jaeger JSON), read span by span, each with its line.

Parsing a large document whole would cost several times its size in memory (orjson's
intermediate document alone is many times larger). Instead the envelope (``resourceSpans`` →
``scopeSpans`` → ``spans``, Jaeger api/v3's ``result`` → ``resourceSpans``, or Jaeger's
``data`` → ``spans``) is walked key by key, and each span is parsed on its own by
``StrictScanner``, which refuses repeated keys, NaN and Infinity.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from otel_agent_replay.core import TapeFormatError

from ._jaeger import jaeger_span
from ._span import DECODE_ERRORS, SpanDataError, SpanRecord, decode_problem, otlp_span
from ._strict_json import (
    DuplicateKeyError,
    StrictScanner,
    duplicate_position,
    json_kind,
    json_kind_at,
)

__all__ = ["DocumentStream"]

_CLOSING = {"{": "}", "[": "]"}
_space_run = re.compile(r"[ \t\n\r]*").match


def _skip(text: str, pos: int) -> int:
    """Position of the first character at or after ``pos`` that is not JSON white space."""
    match = _space_run(text, pos)
    return match.end() if match is not None else pos


class DocumentStream:
    """Reads ``text`` (lines ``first_line + 1`` onwards of ``path``) into ``records``.

    ``document()`` raises ``json.JSONDecodeError`` for text that is not JSON (the caller decides
    what that means) and ``TapeFormatError`` (ending with ``fix``) for JSON that is not a trace.
    """

    def __init__(self, path: str, text: str, first_line: int, fix: str) -> None:
        self.path = path
        self.text = text
        self.first_line = first_line
        self.fix = fix
        self.pos = 0
        self.records: list[SpanRecord] = []
        self._scanner = StrictScanner()
        self._line = 1
        self._line_pos = 0

    def document(self) -> None:
        """Walk the whole text; its spans are in ``records`` afterwards."""
        envelopes: dict[str, Callable[[], object]] = {
            "resourceSpans": self._resource_spans,
            "result": lambda: self._object('"result"', {"resourceSpans": self._resource_spans}),  # api/v3
            "data": lambda: self._array('"data"', self._jaeger_trace),  # Jaeger UI download, /api/traces
            "spans": lambda: self._array('"spans"', self._jaeger_span),  # one Jaeger trace, unwrapped
        }
        keys = self._object("a trace document (OTLP or Jaeger JSON)", envelopes)
        end = _skip(self.text, self.pos)
        if end != len(self.text):
            raise json.JSONDecodeError("unexpected content after the document", self.text, end)
        if envelopes.keys().isdisjoint(keys):
            listed = ", ".join(repr(k) for k in keys[:8]) or "none"
            raise self._error(
                f'not a trace document: no "resourceSpans" (OTLP), "data" (Jaeger) or "result" (Jaeger '
                f"api/v3) at the top (keys found: {listed}); {self.fix}",
                self.first_line + 1,
            )

    def _error(self, message: str, line: int) -> TapeFormatError:
        return TapeFormatError(message, path=self.path, line=line)

    # --- the JSON skeleton ------------------------------------------------------

    def line_at(self, pos: int) -> int:
        """Line of a position in the file; positions mostly grow, so lines are counted once."""
        if pos < self._line_pos:
            return self.first_line + self.text.count("\n", 0, pos) + 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self.first_line + self._line

    def _value(self) -> Any:
        try:
            value, self.pos = self._scanner.value(self.text, self.pos)
        except DuplicateKeyError as dup:
            raise self._duplicate(dup, self.pos) from None
        return value

    def _duplicate(self, dup: DuplicateKeyError, start: int) -> TapeFormatError:
        line = self.line_at(start) + self.text.count("\n", start, duplicate_position(self.text, start))
        return self._error(
            f"duplicate key {dup.key!r} in a JSON object: strict JSON readers refuse it and "
            f"others silently keep one of the values; {self.fix}",
            line,
        )

    def _expect(self, char: str, what: str) -> None:
        pos = _skip(self.text, self.pos)
        if self.text[pos : pos + 1] != char:
            raise json.JSONDecodeError(f"Expecting {what}", self.text, pos)
        self.pos = pos + 1

    def _open(self, char: str, name: str) -> int | None:
        """Step into the object (``{``) or array (``[``) that ``name`` must be.

        Returns where its first member starts, or None when it is empty (then stepped past).
        """
        text = self.text
        pos = _skip(text, self.pos)
        if text[pos : pos + 1] != char:
            found = json_kind_at(text, pos)
            if found is None:
                raise json.JSONDecodeError("Expecting value", text, pos)
            shape = "a JSON object" if char == "{" else "an array"
            raise self._error(f"{name} must be {shape}, found {found}; {self.fix}", self.line_at(pos))
        pos = _skip(text, pos + 1)
        if text[pos : pos + 1] == _CLOSING[char]:
            self.pos = pos + 1
            return None
        return pos

    def _next(self, close: str) -> int | None:
        """After a member: where the next one starts, or None at the closing ``close`` (then stepped past)."""
        text = self.text
        pos = _skip(text, self.pos)
        char = text[pos : pos + 1]
        if char == close:
            self.pos = pos + 1
            return None
        if char != ",":
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        return _skip(text, pos + 1)

    def _object(self, name: str, members: dict[str, Callable[[], object]]) -> list[str]:
        """Walk an object: ``members[key]()`` reads the value of a known key, others are skipped."""
        text = self.text
        keys: list[str] = []
        pos = self._open("{", name)
        while pos is not None:
            if text[pos : pos + 1] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
            self.pos = pos
            key = self._value()
            if key in keys:
                raise self._duplicate(DuplicateKeyError(key), pos)
            keys.append(key)
            self._expect(":", "':' delimiter")
            self.pos = _skip(text, self.pos)
            read = members.get(key)
            if read is None:
                self._value()
            else:
                read()
            pos = self._next("}")
        return keys

    def _array(self, name: str, read: Callable[[], object]) -> None:
        """Walk an array: ``read()`` reads each element."""
        pos = self._open("[", name)
        while pos is not None:
            self.pos = pos
            read()
            pos = self._next("]")

    # --- the trace schemas --------------------------------------------------------

    def _resource_spans(self) -> None:
        self._array('"resourceSpans"', lambda: self._object("a resourceSpans entry", {"scopeSpans": self._scope_spans}))

    def _scope_spans(self) -> None:
        self._array(
            '"scopeSpans"',
            lambda: self._object("a scopeSpans entry", {"spans": lambda: self._array('"spans"', self._otlp_span)}),
        )

    def _jaeger_trace(self) -> None:
        self._object("a Jaeger trace", {"spans": lambda: self._array('"spans"', self._jaeger_span)})

    def _otlp_span(self) -> None:
        self._span(otlp_span)

    def _jaeger_span(self) -> None:
        self._span(jaeger_span)

    def _span(self, convert: Callable[[dict[str, Any], int], SpanRecord]) -> None:
        start = self.pos
        span = self._value()
        line = self.line_at(start)
        try:
            if type(span) is not dict:
                raise SpanDataError(f"a span must be a JSON object, found {json_kind(span)}")
            self.records.append(convert(span, line))
        except DECODE_ERRORS as err:
            raise self._error(decode_problem(err, self.fix), line) from None
