"""Load a tape: our OTLP JSON Lines, the Collector's file export, OTLP JSON, or Jaeger JSON.

``load_tape(path)`` reads a file of finished spans and builds a ``Tape`` (runs → steps);
``iter_spans(path)`` is the layer below it: every span of the file, GenAI or not, as a
``SpanRecord``. The format is detected from the file itself:

- **JSON Lines** (our tapes, the Collector's file exporter, Jaeger ``/api/v3`` streams): the
  first non-blank line is a complete JSON value. Every line is then one object: OTLP
  ``TracesData`` / ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``, one span or many),
  a Jaeger ``/api/v3`` answer (``{"result": {"resourceSpans": [...]}}``, ids in base64) or Jaeger
  JSON (``{"data": [...]}``).
- **One JSON document** (pretty-printed OTLP JSON, the Jaeger UI's download, ``/api/traces/{id}``):
  the first line is not a complete JSON value, so the whole file is read as one document.

Loading is strict and says where: every problem is a ``TapeFormatError`` whose message starts
with ``file:line:`` and ends with the fix. The one exception is an unterminated last line that
does not parse (the recorder died mid-write): it is skipped with a warning, also kept in
``Tape.warnings``.

Speed and memory. Lines are read in binary from a large buffer and parsed by ``orjson``;
arguments and results stay the JSON text they are in the span (``model.Step`` parses them on
access); the garbage collector is paused during the load. Duplicate object keys, which ``orjson``
silently collapses, are ruled out by serialising the parsed line again with ``orjson`` and
comparing bytes: a line that is exactly orjson's serialisation of what orjson parsed cannot hold
a repeated key, so a tape written with ``orjson.dumps`` costs one fast dump and one memcmp per
line. A line that does not round-trip byte for byte (another writer's spacing, escapes or number
format) is parsed again by the standard library with a pairs hook that refuses repeated keys:
always correct, slower only for foreign files. A document, and any line of more than
``_STREAMED_LINE`` bytes, is not parsed whole (a parse tree costs several times the text): its
envelope is walked key by key and each span is parsed on its own (``_DocumentStream``).
"""

from __future__ import annotations

import base64
import binascii
import gc
import json
import json.decoder
import json.scanner
import math
import os
import re
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter
from typing import IO, Any, Final

import orjson

from otel_agent_replay.attributes import (
    AGENT_VERSION,
    CALL_KEY,
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    EXPIRES_AT,
    FUNCTION,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    INPUT,
    KIND,
    KIND_LLM,
    KIND_TOOL,
    MODE,
    MODEL_ARGUMENTS,
    MODEL_RESULT,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OUTPUT,
    PARENT_STEP_ID,
    RECORDED_AT,
    REPLAY_OF,
    RESULT_SHA256,
    RESULT_TRUNCATED,
    RUN_ID,
    SCHEMA_VERSION_ATTR,
    SEQ,
    SIDE_EFFECT,
    SIDE_EFFECT_UNDECLARED,
    STEP_ID,
    SUPPORTED_SCHEMA_VERSIONS,
    TASK,
    TOOL_VERSION,
)
from otel_agent_replay.canonical import canonical_json, dumps_canonical, key_from_json, normalize
from otel_agent_replay.errors import TapeFormatError, TapeNotFoundError
from otel_agent_replay.model import Run, Step, StepError, Tape

__all__ = [
    "JAEGER_ERROR",
    "JAEGER_EVENT_NAME",
    "JAEGER_SPAN_KIND",
    "JAEGER_STATUS_CODE",
    "JAEGER_STATUS_DESCRIPTION",
    "JAEGER_STATUS_ERROR",
    "SpanRecord",
    "iter_spans",
    "load_tape",
]

# --- Jaeger's encoding of OTLP span fields -------------------------------------
# Jaeger has no span status, span kind or scope: the OTLP → Jaeger translation writes them as
# tags (and an event's name as a log field). These are not span attributes of ours; they are
# read only to undo that translation, and never end up in a Step's or Run's attributes.
JAEGER_STATUS_CODE: Final = "otel.status_code"
JAEGER_STATUS_DESCRIPTION: Final = "otel.status_description"
JAEGER_ERROR: Final = "error"
JAEGER_SPAN_KIND: Final = "span.kind"
JAEGER_EVENT_NAME: Final = "event"
JAEGER_STATUS_ERROR: Final = "ERROR"
_JAEGER_FIELD_TAGS: Final = frozenset(
    {
        JAEGER_STATUS_CODE,
        JAEGER_STATUS_DESCRIPTION,
        JAEGER_ERROR,
        JAEGER_SPAN_KIND,
        "otel.scope.name",
        "otel.scope.version",
        "otel.library.name",
        "otel.library.version",
        "internal.span.format",
        "w3c.tracestate",
    }
)

_STATUS_ERROR_CODES: Final = (2, "STATUS_CODE_ERROR")
_ZERO_SPAN_ID: Final = "0" * 16
_BOM: Final = b"\xef\xbb\xbf"
_LINE_ENDS: Final = (b"", b"\n")
_STREAMED_LINE: Final = 8 << 20  # a longer line is walked span by span (see _DocumentStream)
_READ_BUFFER: Final = 1 << 20  # lines of a few KB: a small buffer costs more in refills than in memory
_MISSING: Final = object()

_is_hex32 = re.compile(r"[0-9a-f]{32}").fullmatch
_is_hex16 = re.compile(r"[0-9a-f]{16}").fullmatch
_is_any_hex = re.compile(r"[0-9a-fA-F]+").fullmatch
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


class _Bad(Exception):
    """A malformed span or envelope; converted to TapeFormatError with path and line.

    ``has_fix`` says the message already ends with its fix.
    """

    def __init__(self, message: str, *, has_fix: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.has_fix = has_fix

    def text(self, fix: str) -> str:
        return self.message if self.has_fix else f"{self.message}; {fix}"


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key
        self.pos: int | None = None


_FIX_LINE: Final = "fix or delete the line, or re-record the tape"
_FIX_DOC: Final = "fix the file or export the trace again"


# --- public API ----------------------------------------------------------------


def load_tape(path: str | os.PathLike[str]) -> Tape:
    """Load a tape file (any supported format, detected automatically) into a ``Tape``.

    Raises ``TapeNotFoundError`` when the file does not exist and ``TapeFormatError``
    (message ``file:line: what is wrong; the fix``) when it is malformed. An unterminated last
    line that does not parse is skipped with a ``UserWarning`` and listed in ``Tape.warnings``.
    An empty file is a tape without runs.
    """
    reader = _Reader(os.fspath(path))
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        runs = _build_runs(reader)
    finally:
        if gc_was_enabled:
            gc.enable()
    return Tape(path=reader.path, runs=runs, warnings=tuple(reader.warnings))


def iter_spans(path: str | os.PathLike[str]) -> Iterator[SpanRecord]:
    """Every span of a trace file, in file order, whatever its kind (GenAI or not).

    The lower layer of ``load_tape``: same format detection, same strictness, same warnings.
    """
    return _Reader(os.fspath(path)).spans()


# --- reading ---------------------------------------------------------------------


class _Reader:
    """Reads one file into SpanRecords; collects the warnings it emitted."""

    __slots__ = ("path", "warnings")

    def __init__(self, path: str) -> None:
        self.path = path
        self.warnings: list[str] = []

    def _error(self, message: str, line: int) -> TapeFormatError:
        return TapeFormatError(message, path=self.path, line=line)

    def error_at(self, message: str, record: SpanRecord) -> TapeFormatError:
        """An error about one span, at its line."""
        return self._error(message, record.line)

    def _open(self) -> IO[bytes]:
        try:
            return open(self.path, "rb", buffering=_READ_BUFFER)  # closed by the caller's ``with``
        except FileNotFoundError:
            raise TapeNotFoundError(
                f"{self.path}: no such tape file. Record it first (run the agent with recording on, "
                f"e.g. record mode 'once' or 'all'), or check the path."
            ) from None
        except IsADirectoryError:
            raise TapeFormatError(
                "this is a directory, not a tape file; pass the path of a .jsonl tape", path=self.path
            ) from None

    def spans(self) -> Iterator[SpanRecord]:
        """Detect the format and yield every span of the file."""
        with self._open() as f:
            lineno = 0
            first = b""
            for first in f:
                lineno += 1
                if not first.isspace():
                    break
            else:
                return  # empty (or blank) file: no spans
            if lineno == 1 and first.startswith(_BOM):
                first = first[len(_BOM) :]
            if len(first) > _STREAMED_LINE:
                text, terminated = self._decode_line(first, lineno)
                del first  # the decoded text replaces the bytes: keep one copy of a long line
                records = self._long_line(text, lineno, terminated)
                del text
                yield from records
            else:
                try:
                    data = orjson.loads(first)
                except orjson.JSONDecodeError as exc:
                    yield from self._first_line_failed(f, first, lineno, exc)
                    return
                yield from self._line(first, data, lineno)
            for raw in f:
                lineno += 1
                if raw.isspace():
                    continue
                if len(raw) > _STREAMED_LINE:
                    text, terminated = self._decode_line(raw, lineno)
                    del raw
                    records = self._long_line(text, lineno, terminated)
                    del text
                    yield from records
                    continue
                try:
                    data = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    if raw.endswith(b"\n"):
                        raise self._json_error(exc, lineno, _FIX_LINE) from None
                    self._torn_last_line(lineno, exc)
                    continue
                yield from self._line(raw, data, lineno)

    def _torn_last_line(self, lineno: int, exc: json.JSONDecodeError) -> None:
        self.warn(
            f"{self.path}:{lineno}: skipped the unterminated last line ({exc.msg}): the recorder "
            f"probably stopped mid-write, so its last span is lost. Delete the line to silence this "
            f"warning, or re-record the tape."
        )

    def warn(self, message: str) -> None:
        """Emit a warning at the caller's line (outside this module) and keep it for the Tape."""
        self.warnings.append(message)
        frame = sys._getframe(1)
        level = 2
        while frame.f_back is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
            level += 1
        warnings.warn(message, UserWarning, stacklevel=level)

    def _json_error(self, exc: orjson.JSONDecodeError, line: int, fix: str) -> TapeFormatError:
        doc = exc.doc if isinstance(exc.doc, str) else ""
        near = doc[exc.pos : exc.pos + 9].lstrip("-")
        if near.startswith(("NaN", "Infinity")):
            what = "NaN and Infinity are not JSON numbers, and a tape must be strict JSON"
        else:
            what = f"invalid JSON ({exc.msg} at column {exc.colno})"
        return self._error(f"{what}; {fix}", line)

    def _first_line_failed(
        self, f: IO[bytes], first: bytes, lineno: int, exc: orjson.JSONDecodeError
    ) -> Iterator[SpanRecord]:
        if not first.endswith(b"\n"):
            self._torn_last_line(lineno, exc)  # the file's only line, cut short
            return
        more = f.read(1 << 16)
        while more.isspace():
            more = f.read(1 << 16)
        if not more:
            raise self._json_error(exc, lineno, _FIX_LINE)
        del more
        # Not JSON Lines: the whole file is one JSON document.
        f.seek(0)
        raw = f.read()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            raise self._error(f"not UTF-8 text ({err.reason}); {_FIX_DOC}", line) from None
        del raw
        stream = _DocumentStream(self, text, 0, _FIX_DOC)
        try:
            stream.document()
        except json.JSONDecodeError as doc_exc:
            if _next_line_is_an_object(text, lineno):
                # JSON Lines whose first line is broken, rather than a broken document.
                raise self._json_error(exc, lineno, _FIX_LINE) from None
            raise self._error(f"{_stdlib_json_problem(doc_exc)}; {_FIX_DOC}", doc_exc.lineno) from None
        del text, stream.text
        yield from stream.records

    def _decode_line(self, raw: bytes, lineno: int) -> tuple[str, bool]:
        try:
            return raw.decode("utf-8"), raw.endswith(b"\n")
        except UnicodeDecodeError as err:
            raise self._error(f"not UTF-8 text ({err.reason}); {_FIX_LINE}", lineno) from None

    def _long_line(self, text: str, lineno: int, terminated: bool) -> list[SpanRecord]:
        """A line of many megabytes (a Collector batch, a Jaeger answer): streamed, not parsed whole."""
        stream = _DocumentStream(self, text, lineno - 1, _FIX_LINE)
        try:
            stream.document()
        except json.JSONDecodeError as exc:
            if not terminated:
                self._torn_last_line(lineno, exc)
                return []
            raise self._error(f"{_stdlib_json_problem(exc)}; {_FIX_LINE}", lineno) from None
        del stream.text
        return stream.records

    def _line(self, raw: bytes, data: Any, lineno: int) -> list[SpanRecord]:
        if type(data) is not dict:
            raise self._error(
                f"expected a JSON object (an OTLP TracesData line such as "
                f'{{"resourceSpans":[...]}}), found {_json_kind(data)}; {_FIX_LINE}',
                lineno,
            )
        # Duplicate keys: a line that is exactly orjson's serialisation of what orjson parsed cannot
        # hold a repeated key (the parse kept one value per key); any other line is checked again.
        try:
            dumped = orjson.dumps(data)
        except orjson.JSONEncodeError:
            dumped = b""
        if not (dumped and raw.startswith(dumped) and raw[len(dumped) :] in _LINE_ENDS):
            self._refuse_duplicate_keys(raw, lineno)
        keeps_utf8_copies = not dumped or not dumped.isascii()
        try:
            resource_spans = data.get("resourceSpans", _MISSING)
            if resource_spans is not _MISSING:
                records = _otlp_records(resource_spans, lineno)
            else:
                records = self._envelope(data, lineno)
        except _Bad as bad:
            raise self._error(bad.text(_FIX_LINE), lineno) from None
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
            raise self._error(f"{_malformed(err)}; {_FIX_LINE}", lineno) from None
        if keeps_utf8_copies:
            _drop_utf8_copies(records)
        return records

    def _refuse_duplicate_keys(self, raw: bytes, lineno: int) -> None:
        """Parse ``raw`` again with a pairs hook that refuses a key repeated in one object."""
        try:
            json.loads(raw, object_pairs_hook=_refuse_duplicate_pairs)
        except _DuplicateKey as dup:
            raise self._error(
                f"duplicate key {dup.key!r} in a JSON object: strict JSON readers refuse it and "
                f"others silently keep one of the values; {_FIX_LINE}",
                lineno,
            ) from None
        except (ValueError, RecursionError) as err:
            raise self._error(f"unreadable JSON ({err}); {_FIX_LINE}", lineno) from None

    # --- envelopes -----------------------------------------------------------

    def _envelope(self, data: dict[str, Any], line: int) -> list[SpanRecord]:
        """The spans of a line that is not OTLP TracesData: Jaeger api/v3, or Jaeger JSON."""
        result = data.get("result")
        if type(result) is dict and "resourceSpans" in result:  # Jaeger /api/v3
            return _otlp_records(result["resourceSpans"], line)
        traces = data.get("data", _MISSING)
        if traces is not _MISSING:  # Jaeger UI download, /api/traces
            if type(traces) is not list:
                raise _Bad(f'Jaeger JSON: "data" must be a list of traces, found {_json_kind(traces)}')
            out: list[SpanRecord] = []
            for trace in traces:
                out.extend(_jaeger_records(trace, line))
            return out
        if "spans" in data and "traceID" in data:  # one Jaeger trace without the "data" wrapper
            return _jaeger_records(data, line)
        keys = ", ".join(repr(k) for k in list(data)[:8]) or "none"
        raise _Bad(
            f'not an OTLP TracesData object: no "resourceSpans" (keys found: {keys}); every line of '
            f'a tape is {{"resourceSpans":[...]}} (Jaeger JSON has "data", Jaeger api/v3 "result")'
        )


def _refuse_duplicate_pairs(pairs: list[tuple[str, Any]]) -> None:
    # Returns None rather than the object: the parse is only a check, and this keeps it light.
    if len(pairs) > 1 and len(dict(pairs)) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)


def _next_line_is_an_object(text: str, lineno: int) -> bool:
    """Whether the first non-blank line after ``lineno`` is a JSON object on its own (JSON Lines)."""
    pos = 0
    for _ in range(lineno):
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return False
    for _ in range(8):
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line.strip():
            try:
                return type(orjson.loads(line)) is dict
            except orjson.JSONDecodeError:
                return False
        if end < 0:
            return False
        pos = end + 1
    return False


def _stdlib_json_problem(exc: json.JSONDecodeError) -> str:
    if exc.msg.startswith(_NON_FINITE):
        return "NaN and Infinity are not JSON numbers, and a tape must be strict JSON"
    return f"invalid JSON ({exc.msg} at column {exc.colno})"


_NON_FINITE: Final = "non-finite number"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{_NON_FINITE} {name}")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{_NON_FINITE} {text}")
    return number


def _dict_refusing_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        _refuse_duplicate_pairs(pairs)
    return out


_space_run = re.compile(r"[ \t\n\r]*").match


def _skip(text: str, pos: int) -> int:
    """Position of the first character at or after ``pos`` that is not JSON white space."""
    match = _space_run(text, pos)
    return match.end() if match is not None else pos


_non_finite_literal = re.compile(r"[:\[,][ \t\n\r]*(-?(?:NaN|Infinity))").search


class _DocumentStream:
    """The spans of one JSON document (OTLP or Jaeger JSON), read span by span.

    Parsing a large document whole would cost several times its size in memory (orjson's
    intermediate document alone is many times larger). Instead the envelope (``resourceSpans`` →
    ``scopeSpans`` → ``spans``, or Jaeger's ``data`` → ``spans``) is walked key by key, and each
    span is parsed on its own by the standard library's decoder, which refuses repeated keys,
    NaN and Infinity. Each span knows its line.
    """

    def __init__(self, reader: _Reader, text: str, first_line: int, fix: str) -> None:
        self.reader = reader
        self.text = text
        self.first_line = first_line
        self.fix = fix
        self.pos = 0
        self.records: list[SpanRecord] = []
        decoder = json.JSONDecoder(
            object_pairs_hook=_dict_refusing_duplicates, parse_constant=_refuse_constant, parse_float=_finite_float
        )
        self._scan = json.scanner.make_scanner(decoder)  # type: ignore[arg-type]  # typeshed: the context is a decoder
        self._line = 1
        self._line_pos = 0

    def document(self) -> None:
        keys = self._object(
            "a trace document (OTLP or Jaeger JSON)",
            {
                "resourceSpans": self._resource_spans,
                "result": lambda: self._object('"result"', {"resourceSpans": self._resource_spans}),  # api/v3
                "data": lambda: self._array('"data"', self._jaeger_trace),  # Jaeger UI download, /api/traces
                "spans": lambda: self._array('"spans"', self._jaeger_span),  # one Jaeger trace, unwrapped
            },
        )
        end = _skip(self.text, self.pos)
        if end != len(self.text):
            raise json.JSONDecodeError("unexpected content after the document", self.text, end)
        if not {"resourceSpans", "result", "data", "spans"} & set(keys):
            listed = ", ".join(repr(k) for k in keys[:8]) or "none"
            raise self.reader._error(
                f'not a trace document: no "resourceSpans" (OTLP), "data" (Jaeger) or "result" (Jaeger '
                f"api/v3) at the top (keys found: {listed}); {self.fix}",
                self.first_line + 1,
            )

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
            value, self.pos = self._scan(self.text, self.pos)
        except StopIteration as stop:
            raise json.JSONDecodeError("Expecting value", self.text, stop.value) from None
        except RecursionError:
            raise json.JSONDecodeError("nested too deeply", self.text, self.pos) from None
        except _DuplicateKey as dup:
            raise self._duplicate(dup, self.pos) from None
        except ValueError as err:
            if not isinstance(err, json.JSONDecodeError) and str(err).startswith(_NON_FINITE):
                found = _non_finite_literal(self.text, self.pos)
                raise json.JSONDecodeError(str(err), self.text, found.start(1) if found else self.pos) from None
            raise
        return value

    def _duplicate(self, dup: _DuplicateKey, start: int) -> TapeFormatError:
        line = self.line_at(start) + self.text.count("\n", start, _find_duplicate(self.text, start))
        return self.reader._error(
            f"duplicate key {dup.key!r} in a JSON object: strict JSON readers refuse it and "
            f"others silently keep one of the values; {self.fix}",
            line,
        )

    def _expect(self, char: str, what: str) -> None:
        pos = _skip(self.text, self.pos)
        if self.text[pos : pos + 1] != char:
            raise json.JSONDecodeError(f"Expecting {what}", self.text, pos)
        self.pos = pos + 1

    def _open(self, char: str, name: str) -> None:
        """Step into the object (``{``) or array (``[``) that ``name`` must be."""
        pos = _skip(self.text, self.pos)
        if self.text[pos : pos + 1] != char:
            found = _json_kind_at(self.text, pos)
            if found is None:
                raise json.JSONDecodeError("Expecting value", self.text, pos)
            shape = "a JSON object" if char == "{" else "an array"
            raise self.reader._error(f"{name} must be {shape}, found {found}; {self.fix}", self.line_at(pos))
        self.pos = pos + 1

    def _object(self, name: str, members: dict[str, Any]) -> list[str]:
        """Walk an object: ``members[key]()`` reads the value of a known key, others are skipped."""
        self._open("{", name)
        text = self.text
        keys: list[str] = []
        pos = _skip(text, self.pos)
        if text[pos : pos + 1] == "}":
            self.pos = pos + 1
            return keys
        while True:
            if text[pos : pos + 1] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
            self.pos = pos
            key = self._value()
            if key in keys:
                raise self._duplicate(_DuplicateKey(key), pos)
            keys.append(key)
            self._expect(":", "':' delimiter")
            self.pos = _skip(text, self.pos)
            read = members.get(key)
            if read is None:
                self._value()
            else:
                read()
            pos = _skip(text, self.pos)
            char = text[pos : pos + 1]
            if char == "}":
                self.pos = pos + 1
                return keys
            if char != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = _skip(text, pos + 1)

    def _array(self, name: str, read: Any) -> None:
        """Walk an array: ``read()`` reads each element."""
        self._open("[", name)
        text = self.text
        pos = _skip(text, self.pos)
        if text[pos : pos + 1] == "]":
            self.pos = pos + 1
            return
        while True:
            self.pos = pos
            read()
            pos = _skip(text, self.pos)
            char = text[pos : pos + 1]
            if char == "]":
                self.pos = pos + 1
                return
            if char != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = _skip(text, pos + 1)

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
        self._span(_otlp_span)

    def _jaeger_span(self) -> None:
        self._span(_jaeger_span)

    def _span(self, convert: Any) -> None:
        start = self.pos
        span = self._value()
        line = self.line_at(start)
        try:
            if type(span) is not dict:
                raise _Bad(f"a span must be a JSON object, found {_json_kind(span)}")
            self.records.append(convert(span, line))
        except _Bad as bad:
            raise self.reader._error(bad.text(self.fix), line) from None
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
            raise self.reader._error(f"{_malformed(err)}; {self.fix}", line) from None


def _json_kind_at(text: str, pos: int) -> str | None:
    """What the JSON value at ``pos`` is, from its first character; None when it is no value."""
    char = text[pos : pos + 1]
    if char and (char.isdigit() or char == "-"):
        return "a number"
    return {
        "{": "an object",
        "[": "an array",
        '"': "a string",
        "t": "a boolean",
        "f": "a boolean",
        "n": "null",
        "": "the end of the text",
    }.get(char)


def _find_duplicate(text: str, start: int) -> int:
    """Position of the object with a repeated key in the value at ``start`` (slow: error path only)."""
    decoder = json.decoder.JSONDecoder(object_pairs_hook=_refuse_duplicate_pairs)

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        try:
            return json.decoder.JSONObject(s_and_end, *args)  # type: ignore[attr-defined,no-any-return]
        except _DuplicateKey as dup:
            if dup.pos is None:
                dup.pos = s_and_end[1] - 1
            raise

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    scan = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        scan(text, start)
    except _DuplicateKey as dup:
        if dup.pos is not None:
            return int(dup.pos)
    except (ValueError, RecursionError, StopIteration):
        pass
    return start


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return "an object"


def _malformed(err: Exception) -> str:
    detail = f"{type(err).__name__}: {err}"
    return (
        f"malformed span data ({detail}); spans must follow the OTLP JSON shape "
        f"(resourceSpans → scopeSpans → spans) or Jaeger's JSON shape"
    )


# --- OTLP JSON -------------------------------------------------------------------


def _otlp_records(resource_spans: Any, line: int) -> list[SpanRecord]:
    if type(resource_spans) is not list:
        raise _Bad(f'"resourceSpans" must be a list, found {_json_kind(resource_spans)}')
    out: list[SpanRecord] = []
    append = out.append
    for rs in resource_spans:
        for ss in rs.get("scopeSpans") or ():
            for span in ss.get("spans") or ():
                append(_otlp_span(span, line))
    return out


def _otlp_span(span: dict[str, Any], line: int) -> SpanRecord:
    name = span.get("name", "")
    if type(name) is not str:
        name = str(name)
    trace_id = span.get("traceId")
    span_id = span.get("spanId")
    if not trace_id or not span_id:
        missing = "traceId" if not trace_id else "spanId"
        raise _Bad(
            f"span {name!r} has no {missing}: every OTLP span needs a traceId (32 hex digits) and a "
            f"spanId (16 hex digits)",
        )
    if not (type(trace_id) is str and _is_hex32(trace_id)):
        trace_id = _otlp_id(trace_id, 16, "traceId", name)
    if not (type(span_id) is str and _is_hex16(span_id)):
        span_id = _otlp_id(span_id, 8, "spanId", name)
    parent = span.get("parentSpanId")
    if not parent:
        parent = ""
    elif not (type(parent) is str and _is_hex16(parent)):
        parent = _otlp_id(parent, 8, "parentSpanId", name)
    if parent == _ZERO_SPAN_ID:
        parent = ""
    start = span.get("startTimeUnixNano", 0)
    end = span.get("endTimeUnixNano", 0)
    start_ns = (
        int(start)
        if type(start) is str and start.isdigit() and start.isascii()
        else _nanos(start, "startTimeUnixNano", name)
    )
    end_ns = int(end) if type(end) is str and end.isdigit() and end.isascii() else _nanos(end, "endTimeUnixNano", name)
    attributes = _attributes(span.get("attributes"), name)
    error = None
    status = span.get("status")
    if status and status.get("code") in _STATUS_ERROR_CODES:
        error = _otlp_exception(span.get("events"), status.get("message"), name)
    version = attributes.get(SCHEMA_VERSION_ATTR)
    if version is not None:
        _check_schema_version(version, name)
    return SpanRecord(trace_id, span_id, parent, name, start_ns, end_ns, attributes, error, line)


def _otlp_id(value: Any, size: int, field: str, name: str) -> str:
    """An OTLP id: hex (OTLP/JSON) or base64 (protobuf JSON, as Jaeger's api/v3 writes it)."""
    if type(value) is str:
        if len(value) == 2 * size:
            if _is_any_hex(value):
                return value.lower()
        else:
            decoded = _b64(value)
            if decoded is not None and len(decoded) == size:
                return decoded.hex()
    raise _Bad(
        f"span {name!r}: {field} {value!r} is not {2 * size} hex digits (nor base64 of {size} bytes, "
        f"as Jaeger's api/v3 writes ids)",
    )


def _b64(text: str) -> bytes | None:
    """Strict base64 (standard or URL-safe alphabet, padding optional); None when it is not."""
    padded = text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _nanos(value: Any, field: str, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    if value is None:
        return 0
    raise _Bad(
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
            else:
                out[_intern(kv["key"])] = _any_value(value, kv["key"], where)
    except KeyError:
        out = _attributes_checked(items, where)
    if len(out) != len(items):
        seen: set[str] = set()
        for kv in items:
            if kv["key"] in seen:
                raise _Bad(f"span {where!r}: attribute {kv['key']!r} appears twice")
            seen.add(kv["key"])
    return out


def _attributes_checked(items: Any, where: str) -> dict[str, Any]:
    """The slow, careful twin of ``_attributes``: a missing value is None, a missing key an error."""
    out: dict[str, Any] = {}
    for kv in items:
        key = kv.get("key")
        if type(key) is not str:
            raise _Bad(f'span {where!r}: an attribute has no key (each is {{"key": ..., "value": ...}})')
        value = kv.get("value")
        out[_intern(key)] = None if value is None else _any_value(value, key, where)
    return out


def _string_value(text: Any, key: str, where: str) -> str:
    if type(text) is not str:
        raise _Bad(f"span {where!r}: attribute {key!r}: stringValue {text!r} is not a string")
    return _fresh(text)


def _fresh(text: str) -> str:
    """A copy of a string without the UTF-8 copy that ``orjson.dumps`` caches in non-ASCII strings.

    The duplicate-key check serialises every parsed line, and orjson keeps the UTF-8 form of each
    non-ASCII ``str`` it writes inside that ``str``: kept, it would double the memory of a tape.
    """
    return "".join((text, "")) if not text.isascii() else text


def _drop_utf8_copies(records: list[SpanRecord]) -> None:
    for record in records:
        attrs = record.attributes
        for key, value in attrs.items():
            if type(value) is str and not value.isascii():
                attrs[key] = "".join((value, ""))
        record.name = _fresh(record.name)


def _any_value(value: dict[str, Any], key: str, where: str) -> Any:
    if "stringValue" in value:
        return _string_value(value["stringValue"], key, where)
    if "intValue" in value:
        number = value["intValue"]
        if type(number) is int:
            return number
        if type(number) is str and _is_int_text(number):
            return int(number)
        raise _Bad(f"span {where!r}: attribute {key!r}: intValue {number!r} is not an integer")
    if "boolValue" in value:
        flag = value["boolValue"]
        if type(flag) is bool:
            return flag
        raise _Bad(f"span {where!r}: attribute {key!r}: boolValue {flag!r} is not true or false")
    if "doubleValue" in value:
        return _double(value["doubleValue"], key, where)
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or ()
        return [None if item is None else _any_value(item, key, where) for item in items]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"), where)
    if "bytesValue" in value:
        data = value["bytesValue"]
        decoded = _b64(data) if type(data) is str else None
        if decoded is None:
            raise _Bad(f"span {where!r}: attribute {key!r}: bytesValue is not base64")
        return decoded
    if not value:
        return None
    raise _Bad(f"span {where!r}: attribute {key!r} has an unknown value type {sorted(value)}")


def _double(number: Any, key: str, where: str) -> Any:
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
    raise _Bad(f"span {where!r}: attribute {key!r}: doubleValue {number!r} is not a number")


def _otlp_exception(events: Any, status_message: Any, where: str) -> StepError:
    if events:
        for event in reversed(events):
            if event.get("name") == EXCEPTION_EVENT:
                fields = _attributes(event.get("attributes"), where)
                return _step_error(fields.get(EXCEPTION_TYPE), fields.get(EXCEPTION_MESSAGE), status_message)
    return _step_error(None, None, status_message)


def _step_error(exc_type: Any, message: Any, status_message: Any) -> StepError:
    if message is None:
        message = status_message
    return StepError("" if exc_type is None else str(exc_type), "" if message is None else str(message))


def _check_schema_version(version: Any, name: str) -> None:
    if str(version) not in SUPPORTED_SCHEMA_VERSIONS:
        readable = ", ".join(sorted(SUPPORTED_SCHEMA_VERSIONS))
        raise _Bad(
            f"span {name!r} has {SCHEMA_VERSION_ATTR} {version!r}, which this version of "
            f"otel-agent-replay cannot read (it reads {readable}); upgrade otel-agent-replay, "
            f"or re-record the tape with this version",
            has_fix=True,
        )


# --- Jaeger JSON -----------------------------------------------------------------


def _jaeger_records(trace: Any, line: int) -> list[SpanRecord]:
    if type(trace) is not dict:
        raise _Bad(f"Jaeger JSON: a trace must be an object, found {_json_kind(trace)}")
    return [_jaeger_span(span, line) for span in trace.get("spans") or ()]


def _jaeger_span(span: dict[str, Any], line: int) -> SpanRecord:
    name = span.get("operationName", "")
    if type(name) is not str:
        name = str(name)
    trace_id = _jaeger_id(span.get("traceID"), 32, "traceID", name)
    span_id = _jaeger_id(span.get("spanID"), 16, "spanID", name)
    parent = ""
    follows = ""
    for ref in span.get("references") or ():
        ref_trace = ref.get("traceID")
        if ref_trace and _jaeger_id(ref_trace, 32, "references.traceID", name) != trace_id:
            continue  # a reference to another trace is a link, not a parent
        ref_type = ref.get("refType")
        if ref_type == "CHILD_OF":
            parent = _jaeger_id(ref.get("spanID"), 16, "references.spanID", name)
            break
        if ref_type == "FOLLOWS_FROM" and not follows:
            follows = _jaeger_id(ref.get("spanID"), 16, "references.spanID", name)
    parent = parent or follows
    if not parent and span.get("parentSpanID"):
        parent = _jaeger_id(span["parentSpanID"], 16, "parentSpanID", name)
    if parent == _ZERO_SPAN_ID:
        parent = ""
    start_ns = _micros(span.get("startTime"), "startTime", name) * 1000
    end_ns = start_ns + _micros(span.get("duration"), "duration", name) * 1000
    attributes: dict[str, Any] = {}
    failed = False
    status_message: Any = None
    tags = span.get("tags") or ()
    for tag in tags:
        key = tag["key"]
        value = _jaeger_value(tag, name)
        if key in _JAEGER_FIELD_TAGS:
            if key == JAEGER_STATUS_CODE:
                failed = failed or value == JAEGER_STATUS_ERROR
            elif key == JAEGER_STATUS_DESCRIPTION:
                status_message = value
            elif key == JAEGER_ERROR:
                failed = failed or value is True or value == "true"
            continue
        if key in attributes:
            raise _Bad(f"span {name!r}: tag {key!r} appears twice")
        attributes[_intern(key)] = value
    error = None
    if failed:
        error = _jaeger_exception(span.get("logs"), status_message, name)
    version = attributes.get(SCHEMA_VERSION_ATTR)
    if version is not None:
        _check_schema_version(version, name)
    return SpanRecord(trace_id, span_id, parent, name, start_ns, end_ns, attributes, error, line)


def _jaeger_id(value: Any, width: int, field: str, name: str) -> str:
    # Jaeger writes ids as hex without leading zeros, or zero-padded to 16 digits.
    if type(value) is str and 0 < len(value) <= width and _is_any_hex(value):
        return value.lower().rjust(width, "0")
    if not value:
        raise _Bad(f"span {name!r} has no {field}: every Jaeger span needs a traceID and a spanID")
    raise _Bad(
        f"span {name!r}: {field} {value!r} is not a hex id of at most {width} digits",
    )


def _micros(value: Any, field: str, name: str) -> int:
    if type(value) is int and value >= 0:
        return value
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)
    if value is None:
        return 0
    raise _Bad(f"span {name!r}: {field} {value!r} is not an integer number of microseconds")


def _jaeger_value(tag: dict[str, Any], where: str) -> Any:
    kind = tag.get("type", "string")
    value = tag.get("value")
    if kind == "string":
        return value if type(value) is str else "" if value is None else str(value)
    if kind == "int64":
        if type(value) is int:
            return value
        if type(value) is str and _is_int_text(value):
            return int(value)
    elif kind == "bool":
        if type(value) is bool:
            return value
        if value in ("true", "false"):
            return value == "true"
    elif kind == "float64":
        return _double(value, tag.get("key", ""), where)
    elif kind == "binary":
        decoded = _b64(value) if type(value) is str else None
        if decoded is not None:
            return decoded
    else:
        raise _Bad(f"span {where!r}: tag {tag.get('key')!r} has an unknown type {kind!r}")
    raise _Bad(f"span {where!r}: tag {tag.get('key')!r}: {value!r} is not a valid {kind}")


def _jaeger_exception(logs: Any, status_message: Any, where: str) -> StepError:
    for log in reversed(logs or ()):
        fields = {field["key"]: _jaeger_value(field, where) for field in log.get("fields") or ()}
        if fields.get(JAEGER_EVENT_NAME) == EXCEPTION_EVENT:
            return _step_error(fields.get(EXCEPTION_TYPE), fields.get(EXCEPTION_MESSAGE), status_message)
    return _step_error(None, None, status_message)


# --- spans → runs and steps ------------------------------------------------------


class _PendingStep:
    """A step span that lacks some of our attributes (a foreign span): finished once its run is known."""

    __slots__ = ("args_json", "index", "kind", "record", "seq", "start_ns", "tool")

    def __init__(self, index: int, kind: str, record: SpanRecord, tool: str, args_json: str, seq: Any) -> None:
        self.index = index
        self.kind = kind
        self.record = record
        self.tool = tool
        self.args_json = args_json
        self.seq = _int_or_none(seq)
        self.start_ns = record.start_ns


class _RunParts:
    """What is known about one run while the file is read."""

    __slots__ = ("first", "pending", "record", "steps")

    def __init__(self, first: int) -> None:
        self.first = first
        self.record: SpanRecord | None = None
        self.steps: list[Step] = []
        self.pending: list[_PendingStep] = []


def _build_runs(reader: _Reader) -> tuple[Run, ...]:
    runs: dict[str, _RunParts] = {}
    parents: dict[tuple[str, str], str] = {}
    run_of_span: dict[tuple[str, str], str] = {}
    orphans: list[_PendingStep] = []  # foreign steps: their run is found once every span is read
    step_lines: dict[tuple[str, str], int] = {}
    without_arguments = 0
    index = 0
    for record in reader.spans():
        index += 1
        key = (record.trace_id, record.span_id)
        parents[key] = record.parent_span_id
        attrs = record.attributes
        op = attrs.get(GEN_AI_OPERATION_NAME)
        if op is None:
            continue
        if op == OP_EXECUTE_TOOL:
            kind = KIND_TOOL
            args = attrs.get(GEN_AI_TOOL_CALL_ARGUMENTS)
            tool = attrs.get(GEN_AI_TOOL_NAME)
            if tool is None:
                tool = _name_suffix(record.name, OP_EXECUTE_TOOL)
        elif op == OP_CHAT and attrs.get(KIND) == KIND_LLM:
            kind = KIND_LLM
            args = attrs.get(MODEL_ARGUMENTS)
            tool = attrs.get(FUNCTION)
            if tool is None:
                tool = _name_suffix(record.name, OP_CHAT)
        elif op == OP_INVOKE_AGENT:
            run_id = _text(attrs.get(RUN_ID)) or record.span_id
            parts = runs.get(run_id)
            if parts is None:
                parts = runs[run_id] = _RunParts(index)
            elif parts.record is not None:
                raise reader.error_at(
                    f"a second run span for run_id {run_id!r}{_first_at(parts.record.line)}: a "
                    f"run is recorded once; remove the duplicate, or record the retry as a new run",
                    record,
                )
            parts.record = record
            run_of_span[key] = run_id
            continue
        else:
            continue
        if args is None:
            without_arguments += 1
            continue
        if key in step_lines:
            raise reader.error_at(
                f"step span {record.span_id} of trace {record.trace_id} appears twice"
                f"{_first_at(step_lines[key])}; remove the duplicate or re-record the tape",
                record,
            )
        step_lines[key] = record.line
        if type(tool) is not str:
            tool = str(tool)
        if type(args) is not str:
            args = canonical_json(args)
        step_run = attrs.get(RUN_ID)
        seq = attrs.get(SEQ)
        step_id = attrs.get(STEP_ID)
        call_key = attrs.get(CALL_KEY)
        if type(step_run) is str and step_run and type(seq) is int and type(step_id) is str and type(call_key) is str:
            # Recorded by otel-agent-replay: everything is on the span.
            parts = runs.get(step_run)
            if parts is None:
                parts = runs[step_run] = _RunParts(index)
            parts.steps.append(_make_step(kind, tool, args, seq, step_id, call_key, step_run, record))
            continue
        pending = _PendingStep(index, kind, record, tool, args, seq)
        if type(step_run) is str and step_run:
            parts = runs.get(step_run)
            if parts is None:
                parts = runs[step_run] = _RunParts(index)
            parts.pending.append(pending)
        else:
            orphans.append(pending)
    if without_arguments:
        reader.warn(
            f"{reader.path}: skipped {without_arguments} tool or model span(s) without recorded "
            f"arguments ({GEN_AI_TOOL_CALL_ARGUMENTS} / {MODEL_ARGUMENTS}): they cannot be replayed. "
            f"Turn on content capture in the instrumentation that wrote them, or record with "
            f"otel-agent-replay."
        )
    recorded = _RecordedSteps(runs) if orphans else None
    for pending in orphans:
        if recorded is not None and recorded.has_second_view(pending):
            continue  # the same call, seen by a second instrumentation
        run_id = _ancestor_run(pending.record, run_of_span, parents) or pending.record.trace_id
        parts = runs.get(run_id)
        if parts is None:
            parts = runs[run_id] = _RunParts(pending.index)
        elif pending.index < parts.first:
            parts.first = pending.index
        parts.pending.append(pending)
    out: list[Run] = []
    for run_id, parts in sorted(runs.items(), key=lambda item: item[1].first):
        steps = _ordered_steps(run_id, parts)
        if parts.record is not None:
            out.append(_run(run_id, parts.record, steps))
        else:
            out.append(_incomplete_run(run_id, steps))
    return tuple(out)


class _RecordedSteps:
    """Where the steps recorded by otel-agent-replay are: (trace, span, tool) and (trace, parent, tool)."""

    __slots__ = ("by_parent", "by_span")

    def __init__(self, runs: dict[str, _RunParts]) -> None:
        self.by_span: set[tuple[str, str, str]] = set()
        self.by_parent: set[tuple[str, str, str]] = set()
        for parts in runs.values():
            for step in parts.steps:
                self.by_span.add((step.trace_id, step.span_id, step.tool))
                self.by_parent.add((step.trace_id, step.parent_span_id, step.tool))

    def has_second_view(self, pending: _PendingStep) -> bool:
        """Whether a foreign tool span is another instrumentation's view of a step we recorded.

        An application instrumented twice (a framework's GenAI instrumentation and ``@tool``)
        writes two nested ``execute_tool`` spans for one call; only ours is a step. Spans of the
        same tool that are directly parent and child are taken to be one call.
        """
        record = pending.record
        return (record.trace_id, record.span_id, pending.tool) in self.by_parent or (
            record.trace_id,
            record.parent_span_id,
            pending.tool,
        ) in self.by_span


def _ancestor_run(
    record: SpanRecord, run_of_span: dict[tuple[str, str], str], parents: dict[tuple[str, str], str]
) -> str | None:
    """The run span nearest above a span in its trace (through spans of any kind)."""
    trace_id = record.trace_id
    span_id = record.parent_span_id
    hops = 0
    while span_id and hops <= len(parents):
        key = (trace_id, span_id)
        run_id = run_of_span.get(key)
        if run_id is not None:
            return run_id
        span_id = parents.get(key, "")
        hops += 1
    return None


_seq_order = attrgetter("seq", "start_ns")


def _ordered_steps(run_id: str, parts: _RunParts) -> tuple[Step, ...]:
    """A run's steps in seq order; foreign steps get their seq, step_id and call key here."""
    steps = parts.steps
    if not parts.pending:
        steps.sort(key=_seq_order)
        return tuple(steps)
    pending = parts.pending
    top = max((step.seq for step in steps), default=0)
    top = max((p.seq for p in pending if p.seq is not None), default=top)
    unnumbered = sorted((p for p in pending if p.seq is None), key=lambda p: (p.start_ns, p.index))
    for offset, p in enumerate(unnumbered, start=1):
        p.seq = top + offset  # foreign steps: numbered after any recorded seq, in start-time order
    mixed: list[Step | _PendingStep] = [*steps, *pending]
    mixed.sort(key=_seq_order)
    calls: dict[str, int] = {}
    out: list[Step] = []
    for item in mixed:
        nth = calls[item.tool] = calls.get(item.tool, 0) + 1
        if isinstance(item, Step):
            out.append(item)
            continue
        attrs = item.record.attributes
        call_key = attrs.get(CALL_KEY)
        if type(call_key) is not str or not call_key:
            call_key = _foreign_call_key(item.tool, item.args_json)
        seq = item.seq
        assert seq is not None  # numbered above
        step_id = _text(attrs.get(STEP_ID)) or f"{item.tool}#{nth}"
        out.append(_make_step(item.kind, item.tool, item.args_json, seq, step_id, call_key, run_id, item.record))
    return tuple(out)


def _make_step(
    kind: str,
    tool: str,
    args_json: str,
    seq: int,
    step_id: str,
    call_key: str,
    run_id: str,
    record: SpanRecord,
) -> Step:
    get = record.attributes.get
    result = get(MODEL_RESULT if kind == KIND_LLM else GEN_AI_TOOL_CALL_RESULT)
    if result is not None and type(result) is not str:
        result = canonical_json(result)
    parent_step_id = get(PARENT_STEP_ID)
    if type(parent_step_id) is not str:
        parent_step_id = "" if parent_step_id is None else str(parent_step_id)
    side_effect = get(SIDE_EFFECT)
    if side_effect == SIDE_EFFECT_UNDECLARED:
        side_effect = None
    truncated = get(RESULT_TRUNCATED)
    return Step(
        kind=kind,
        tool=tool,
        args_json=args_json,
        result_json=result,
        error=record.error,
        seq=seq,
        step_id=step_id,
        parent_step_id=parent_step_id,
        side_effect=_text(side_effect),
        tool_version=_text(get(TOOL_VERSION)),
        call_key=call_key,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        run_id=run_id,
        trace_id=record.trace_id,
        span_id=record.span_id,
        parent_span_id=record.parent_span_id,
        name=record.name,
        result_truncated=truncated is True or truncated == "true",
        result_sha256=_text(get(RESULT_SHA256)),
        expires_at=_text(get(EXPIRES_AT)),
        model=_text(get(GEN_AI_REQUEST_MODEL)),
        provider=_text(get(GEN_AI_PROVIDER_NAME)),
        input_tokens=_int_or_none(get(GEN_AI_USAGE_INPUT_TOKENS)),
        output_tokens=_int_or_none(get(GEN_AI_USAGE_OUTPUT_TOKENS)),
        attributes=record.attributes,
    )


def _foreign_call_key(tool: str, args_json: str) -> str:
    """The call key of a step recorded without one: canonical JSON of its arguments."""
    try:
        canonical = dumps_canonical(normalize(orjson.loads(args_json)))
    except orjson.JSONDecodeError:
        canonical = canonical_json(args_json)
    return key_from_json(tool, canonical)


def _run(run_id: str, record: SpanRecord, steps: tuple[Step, ...]) -> Run:
    attrs = record.attributes
    agent_name = _text(attrs.get(GEN_AI_AGENT_NAME))
    if agent_name is None:
        agent_name = _name_suffix(record.name, OP_INVOKE_AGENT)
    return Run(
        run_id=run_id,
        trace_id=record.trace_id,
        span_id=record.span_id,
        agent_name=agent_name,
        agent_version=_text(attrs.get(AGENT_VERSION)),
        task=_text(attrs.get(TASK)),
        input_json=_json_text(attrs.get(INPUT)),
        output_json=_json_text(attrs.get(OUTPUT)),
        steps=steps,
        complete=True,
        conversation_id=_text(attrs.get(GEN_AI_CONVERSATION_ID)),
        mode=_text(attrs.get(MODE)),
        replay_of=_text(attrs.get(REPLAY_OF)),
        recorded_at=_text(attrs.get(RECORDED_AT)),
        error=record.error,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        attributes=attrs,
    )


def _incomplete_run(run_id: str, steps: tuple[Step, ...]) -> Run:
    """A run whose run span never reached the tape: what its steps tell about it."""
    step_spans = {step.span_id for step in steps}
    outer = {step.parent_span_id for step in steps if step.parent_span_id not in step_spans}
    return Run(
        run_id=run_id,
        trace_id=steps[0].trace_id if steps else "",
        span_id=outer.pop() if len(outer) == 1 else "",
        agent_name="",
        agent_version=None,
        task=None,
        input_json=None,
        output_json=None,
        steps=steps,
        complete=False,
        start_ns=min((step.start_ns for step in steps), default=0),
        end_ns=max((step.end_ns for step in steps), default=0),
    )


def _first_at(line: int) -> str:
    return f" (the first on line {line})" if line else ""


def _name_suffix(span_name: str, operation: str) -> str:
    prefix = operation + " "
    return span_name[len(prefix) :] if span_name.startswith(prefix) else span_name


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    return str(value)


def _json_text(value: Any) -> str | None:
    """An attribute that holds JSON text; a structured value (foreign writers) becomes canonical JSON."""
    if value is None or type(value) is str:
        return value
    return canonical_json(value)


def _int_or_none(value: Any) -> int | None:
    if type(value) is int:
        return value
    if type(value) is str and _is_int_text(value):
        return int(value)
    return None
