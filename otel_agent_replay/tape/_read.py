"""Reading a trace file into ``SpanRecord``s: format detection, strict JSON, where each span was.

The format is detected from the file itself:

- **JSON Lines** (our tapes, the Collector's file exporter, Jaeger ``/api/v3`` streams): the
  first non-blank line is a complete JSON value. Every line is then one object: OTLP
  ``TracesData`` / ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``, one span or many),
  a Jaeger ``/api/v3`` answer (``{"result": {"resourceSpans": [...]}}``, ids in base64) or Jaeger
  JSON (``{"data": [...]}``).
- **One JSON document** (pretty-printed OTLP JSON, the Jaeger UI's download, ``/api/traces/{id}``):
  the first line is not a complete JSON value, so the whole file is read as one document.

Every problem is a ``TapeFormatError`` whose message starts with ``file:line:`` and ends with the
fix. The one exception is an unterminated last line that does not parse (the recorder died
mid-write): it is skipped with a ``TapeWarning``, also kept in ``TapeReader.warnings``.

Speed and memory. Lines are read in binary from a large buffer and parsed by ``orjson``.
Duplicate object keys, which ``orjson`` silently collapses, are ruled out by serialising the
parsed line again with ``orjson`` and comparing bytes: a line that is exactly orjson's
serialisation of what orjson parsed cannot hold a repeated key, so a tape written with
``orjson.dumps`` costs one fast dump and one memcmp per line. A line that does not round-trip
byte for byte (another writer's spacing, escapes or number format) is parsed again by the
standard library with a pairs hook that refuses repeated keys: always correct, slower only for
foreign files. A document, and any line of more than ``_STREAMED_LINE`` bytes, is not parsed
whole (a parse tree costs several times the text): ``DocumentStream`` walks it span by span.

A tape of ours repeats one resource and one scope on every line (~560 bytes of a 1.8 KB step
line). The reader keeps those bytes, the *frame*, from a line it read whole, and a later line that
starts with them has only its spans parsed and checked (``_framed``); a line it cannot take that
way is read whole, so errors stay those of the whole line. Trace and parent ids already checked
in the file are looked up (``KnownIds``).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Final

import orjson

from otel_agent_replay.core import MAX_LINE_BYTES, TapeFormatError, TapeNotFoundError, TapeWarning, open_regular

from ._document import DocumentStream
from ._jaeger import jaeger_records
from ._span import (
    DECODE_ERRORS,
    KnownIds,
    SpanDataError,
    SpanRecord,
    decode_problem,
    drop_utf8_copies,
    otlp_records,
    otlp_span,
)
from ._strict_json import DuplicateKeyError, json_kind, json_problem, refuse_duplicate_pairs

__all__ = ["TapeReader", "paused_gc"]

_BOM: Final = b"\xef\xbb\xbf"
_LINE_ENDS: Final = (b"", b"\n")
_STREAMED_LINE: Final = 8 << 20  # a longer line is walked span by span (see DocumentStream)
_READ_BUFFER: Final = 1 << 20  # lines of a few KB: a small buffer costs more in refills than in memory
_MISSING: Final = object()
_FRAME_END: Final = b"}]}]}\n"  # what closes a line of one resource and one scope after its "spans" list
_EMPTY_SPANS: Final = b"[]}]}]}"
_FIX_LINE: Final = "fix or delete the line, or re-record the tape"
_FIX_DOC: Final = "fix the file or export the trace again"
# A warning points at the first frame outside these: the modules behind load_tape and iter_spans.
_LOADER_PACKAGE: Final = __name__.rpartition(".")[0] + "."


@contextmanager
def paused_gc() -> Iterator[None]:
    """The garbage collector off for the block: a load makes millions of objects and no cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class TapeReader:
    """Reads one file into SpanRecords; collects the warnings it emitted."""

    __slots__ = ("_frame", "_known", "max_line_bytes", "path", "warnings")

    def __init__(self, path: str, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.warnings: list[str] = []
        self._known = KnownIds()
        self._frame = b""  # see _learn_frame

    def error(self, message: str, line: int) -> TapeFormatError:
        """An error about ``line`` of the file."""
        return TapeFormatError(message, path=self.path, line=line)

    def warn(self, message: str) -> None:
        """Emit a ``TapeWarning`` at the caller's line (outside the loader) and keep it."""
        self.warnings.append(message)
        frame = sys._getframe(1)
        level = 2
        while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(_LOADER_PACKAGE):
            frame = frame.f_back
            level += 1
        warnings.warn(message, TapeWarning, stacklevel=level)

    def spans(self) -> Iterator[SpanRecord]:
        """Detect the format and yield every span of the file."""
        for records in self.batches():
            yield from records

    def batches(self) -> Iterator[list[SpanRecord]]:
        """Detect the format and yield the spans of the file, a line's spans at a time (a document's at once)."""
        cap = self.max_line_bytes
        with self._open() as f:
            readline = f.readline
            lineno = 0
            first = True
            while True:
                raw = readline(cap + 1)
                if not raw:
                    return
                lineno += 1
                if len(raw) > cap and not (len(raw) == cap + 1 and raw.endswith(b"\n")):
                    raise self._too_long(lineno)
                frame = self._frame
                if frame and raw.startswith(frame) and raw.endswith(_FRAME_END) and len(raw) <= _STREAMED_LINE:
                    records = self._framed(raw, len(frame), lineno)
                    if records is not None:
                        yield records
                        continue
                if raw.isspace():
                    continue
                if lineno == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if len(raw) > _STREAMED_LINE:
                    text, terminated = self._decode_line(raw, lineno)
                    del raw  # the decoded text replaces the bytes: keep one copy of a long line
                    records = self._long_line(text, lineno, terminated)
                    del text
                else:
                    try:
                        data = orjson.loads(raw)
                    except orjson.JSONDecodeError as exc:
                        if not raw.endswith(b"\n"):
                            self._torn_last_line(lineno, exc)
                        elif first:
                            yield self._document(f, lineno, exc)
                        else:
                            raise self._json_error(exc, lineno, _FIX_LINE) from None
                        return
                    records = self._line(raw, data, lineno)
                first = False
                yield records

    def _open(self) -> IO[bytes]:
        if not os.path.lexists(self.path):
            raise TapeNotFoundError(
                f"{self.path}: no such tape file. Record it first (run the agent with recording on, "
                f"e.g. record mode 'once' or 'all'), or check the path."
            )
        try:
            return open_regular(self.path, "tape file", _READ_BUFFER)  # closed by the caller's ``with``
        except TapeFormatError as exc:
            if "a directory" in str(exc):
                raise TapeFormatError(
                    "this is a directory, not a tape file; pass the path of a .jsonl tape", path=self.path
                ) from None
            raise

    def _too_long(self, lineno: int) -> TapeFormatError:
        """A line longer than ``max_line_bytes``: an error, not a MemoryError."""
        cap = self.max_line_bytes
        return self.error(
            f"the line is longer than the cap of {cap:,} bytes (at column {cap + 1}); a tape line is "
            "one span, or one Collector batch: pass load_tape(..., max_line_bytes=...) if it is genuine",
            lineno,
        )

    def _torn_last_line(self, lineno: int, exc: json.JSONDecodeError) -> None:
        self.warn(
            f"{self.path}:{lineno}: skipped the unterminated last line ({exc.msg}): the recorder "
            f"probably stopped mid-write, so its last span is lost. Delete the line to silence this "
            f"warning, or re-record the tape."
        )

    def _json_error(self, exc: json.JSONDecodeError, line: int, fix: str) -> TapeFormatError:
        return self.error(f"{json_problem(exc)}; {fix}", line)

    def _document(self, f: IO[bytes], lineno: int, exc: orjson.JSONDecodeError) -> list[SpanRecord]:
        """The first line, terminated, is no JSON value: the file is one document, or broken JSON Lines."""
        more = f.read(1 << 16)
        while more.isspace():
            more = f.read(1 << 16)
        if not more:
            raise self._json_error(exc, lineno, _FIX_LINE)
        del more
        f.seek(0)
        raw = f.read()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            raise self.error(f"not UTF-8 text ({err.reason}); {_FIX_DOC}", line) from None
        del raw
        stream = DocumentStream(self.path, text, 0, _FIX_DOC)
        try:
            stream.document()
        except json.JSONDecodeError as doc_exc:
            if _next_line_is_an_object(text, lineno):
                # JSON Lines whose first line is broken, rather than a broken document.
                raise self._json_error(exc, lineno, _FIX_LINE) from None
            raise self._json_error(doc_exc, doc_exc.lineno, _FIX_DOC) from None
        del text, stream.text
        return stream.records

    def _decode_line(self, raw: bytes, lineno: int) -> tuple[str, bool]:
        try:
            return raw.decode("utf-8"), raw.endswith(b"\n")
        except UnicodeDecodeError as err:
            raise self.error(f"not UTF-8 text ({err.reason}); {_FIX_LINE}", lineno) from None

    def _long_line(self, text: str, lineno: int, terminated: bool) -> list[SpanRecord]:
        """A line of many megabytes (a Collector batch, a Jaeger answer): streamed, not parsed whole."""
        stream = DocumentStream(self.path, text, lineno - 1, _FIX_LINE)
        try:
            stream.document()
        except json.JSONDecodeError as exc:
            if not terminated:
                self._torn_last_line(lineno, exc)
                return []
            raise self._json_error(exc, lineno, _FIX_LINE) from None
        del stream.text
        return stream.records

    def _line(self, raw: bytes, data: Any, lineno: int) -> list[SpanRecord]:
        if type(data) is not dict:
            raise self.error(
                f"expected a JSON object (an OTLP TracesData line such as "
                f'{{"resourceSpans":[...]}}), found {json_kind(data)}; {_FIX_LINE}',
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
        elif not (self._frame and raw.startswith(self._frame)):
            self._learn_frame(raw, data)
        keeps_utf8_copies = not dumped or not dumped.isascii()
        try:
            records = _records_of_object(data, lineno, self._known)
        except DECODE_ERRORS as err:
            raise self.error(decode_problem(err, _FIX_LINE), lineno) from None
        if keeps_utf8_copies:
            drop_utf8_copies(records)
        return records

    def _learn_frame(self, raw: bytes, data: dict[str, Any]) -> None:
        """Keep what this line has before its spans, if it is one resource, one scope and then the spans.

        ``raw`` is exactly orjson's serialisation of ``data`` (the caller checked): the frame is then
        the bytes up to the ``"spans":`` of its only scope, and such a line ends with ``_FRAME_END``.
        Every byte of the frame has been read and checked as part of this line.
        """
        if len(data) != 1:
            return
        resource_spans = data.get("resourceSpans")
        if type(resource_spans) is not list or len(resource_spans) != 1:
            return
        rs = resource_spans[0]
        if type(rs) is not dict or not rs or next(reversed(rs)) != "scopeSpans":
            return
        scope_spans = rs["scopeSpans"]
        if type(scope_spans) is not list or len(scope_spans) != 1:
            return
        ss = scope_spans[0]
        if type(ss) is not dict or not ss or next(reversed(ss)) != "spans" or type(ss["spans"]) is not list:
            return
        try:
            envelope = orjson.dumps({"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": []}]}]})
        except orjson.JSONEncodeError:
            return
        frame = envelope[: -len(_EMPTY_SPANS)]
        if envelope.endswith(_EMPTY_SPANS) and raw.startswith(frame):
            self._frame = frame

    def _framed(self, raw: bytes, start: int, lineno: int) -> list[SpanRecord] | None:
        """The spans of a line that starts with the frame of an earlier line: only its spans are parsed.

        ``raw`` is the frame, the text of a "spans" value and ``_FRAME_END``. When that text is
        exactly orjson's serialisation of a list, the line is orjson's serialisation of the frame's
        resource and scope with those spans: valid JSON without a repeated key, as the whole line
        would be found to be. Anything else returns None and the line is read in full, which raises
        the error the line deserves.
        """
        text = raw[start : -len(_FRAME_END)]
        try:
            spans = orjson.loads(text)
            if type(spans) is not list or orjson.dumps(spans) != text:
                return None
            records = [otlp_span(span, lineno, self._known) for span in spans]
        except (orjson.JSONDecodeError, orjson.JSONEncodeError, *DECODE_ERRORS):
            return None
        if not text.isascii():
            drop_utf8_copies(records)
        return records

    def _refuse_duplicate_keys(self, raw: bytes, lineno: int) -> None:
        """Parse ``raw`` again with a pairs hook that refuses a key repeated in one object."""
        try:
            json.loads(raw, object_pairs_hook=refuse_duplicate_pairs)
        except DuplicateKeyError as dup:
            raise self.error(
                f"duplicate key {dup.key!r} in a JSON object: strict JSON readers refuse it and "
                f"others silently keep one of the values; {_FIX_LINE}",
                lineno,
            ) from None
        except (ValueError, RecursionError) as err:
            raise self.error(f"unreadable JSON ({err}); {_FIX_LINE}", lineno) from None


def _records_of_object(data: dict[str, Any], line: int, known: KnownIds) -> list[SpanRecord]:
    """The spans of one parsed line: OTLP TracesData, a Jaeger api/v3 answer, or Jaeger JSON."""
    resource_spans = data.get("resourceSpans", _MISSING)
    if resource_spans is not _MISSING:
        return otlp_records(resource_spans, line, known)
    result = data.get("result")
    if type(result) is dict and "resourceSpans" in result:  # Jaeger /api/v3
        return otlp_records(result["resourceSpans"], line, known)
    traces = data.get("data", _MISSING)
    if traces is not _MISSING:  # Jaeger UI download, /api/traces
        if type(traces) is not list:
            raise SpanDataError(f'Jaeger JSON: "data" must be a list of traces, found {json_kind(traces)}')
        out: list[SpanRecord] = []
        for trace in traces:
            out.extend(jaeger_records(trace, line))
        return out
    if "spans" in data and "traceID" in data:  # one Jaeger trace without the "data" wrapper
        return jaeger_records(data, line)
    keys = ", ".join(repr(k) for k in list(data)[:8]) or "none"
    raise SpanDataError(
        f'not an OTLP TracesData object: no "resourceSpans" (keys found: {keys}); every line of '
        f'a tape is {{"resourceSpans":[...]}} (Jaeger JSON has "data", Jaeger api/v3 "result")'
    )


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
