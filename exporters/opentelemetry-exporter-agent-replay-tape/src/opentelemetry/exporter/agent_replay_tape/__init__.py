"""Lossless OTLP JSON Lines span exporter: the tape of otel-agent-replay.

``TapeSpanExporter`` writes each span as one OTLP JSON ``TracesData`` line (the
OpenTelemetry file-exporter format) appended to a file. It is registered under the
``opentelemetry_traces_exporter`` entry point as ``agent_replay_tape``, so
``OTEL_TRACES_EXPORTER=agent_replay_tape`` with ``OTEL_EXPORTER_AGENT_REPLAY_TAPE_PATH``
selects it. ``TapeSpanProcessor`` hands every span to the exporter as it ends, so the
tape does not depend on a queue that can drop spans.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ._encode import LineEncoder, encode_attributes, encode_span, encode_value
from ._writer import AppendError, AppendWriter

__all__ = [
    "FSYNC_ENV",
    "PATH_ENV",
    "ExporterStats",
    "LineEncoder",
    "TapeSpanExporter",
    "TapeSpanProcessor",
    "encode_attributes",
    "encode_span",
    "encode_value",
]

PATH_ENV = "OTEL_EXPORTER_AGENT_REPLAY_TAPE_PATH"
FSYNC_ENV = "OTEL_EXPORTER_AGENT_REPLAY_TAPE_FSYNC"
DEFAULT_PATH = "agent-replay-tape.jsonl"
DEFAULT_MAX_PENDING_BYTES = 64 * 1024 * 1024

_logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExporterStats:
    """What a tape exporter has done so far."""

    spans_written: int
    spans_pending: int
    """Encoded but not yet on disk (the last write failed); retried on the next export."""
    spans_dropped: int
    """Given up on: encoding failed, the pending buffer overflowed, or shutdown could not write them."""
    write_failures: int
    torn_bytes_removed: int
    reopened: int = 0
    """How often the tape's path was found deleted, moved away or replaced, and opened again."""
    spans_left_behind: int = 0
    """Spans written to a file that was then deleted, moved away or replaced: not at the path any more
    (unless whoever replaced the file copied them)."""
    changed_underneath: int = 0
    """How often another process was found to have cut the tape short or overwritten it in place."""
    spans_lost: int = 0
    """Spans this exporter had written that another process then cut off or overwrote."""
    moved_aside: tuple[str, ...] = ()
    """Tapes moved aside (``{name}.changed-{n}``) because another process left a line there that is
    not a tape line; the spans went on into a new file at the path."""


class TapeSpanExporter(SpanExporter):
    """Appends spans to a tape file, one OTLP JSON line per span.

    ``export`` never raises and never blocks for longer than ``lock_timeout``. When a write
    fails part way (a full disk), the spans already whole on the file count as written and
    the rest stay pending (up to ``max_pending_bytes``), retried on the next export, flush
    or shutdown without writing any span twice. When the path no longer names the open
    file (deleted, moved away, replaced), the next export opens the path again and warns.
    Everything given up on is counted in ``stats`` and logged. After ``shutdown`` every
    export fails. ``shutdown`` is idempotent.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        fsync: bool | None = None,
        lock_timeout: float = 10.0,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
    ) -> None:
        if path is None:
            path = os.environ.get(PATH_ENV) or DEFAULT_PATH
        if fsync is None:
            fsync = os.environ.get(FSYNC_ENV, "").strip().lower() in ("1", "true", "yes")
        self.path = os.fspath(path)
        self._writer = AppendWriter(self.path, fsync=fsync, lock_timeout=lock_timeout)
        self._encoder = LineEncoder()
        self._max_pending_bytes = max_pending_bytes
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._lock = threading.Lock()
        self._shutdown = False
        self._written = 0
        self._dropped = 0
        self._failures = 0
        self._failing = False
        self._failing_dropped = 0  # dropped since the failures began

    @property
    def stats(self) -> ExporterStats:
        """Counters: written, pending, dropped, write failures, torn bytes cut."""
        return ExporterStats(
            spans_written=self._written,
            spans_pending=len(self._pending),
            spans_dropped=self._dropped,
            write_failures=self._failures,
            torn_bytes_removed=self._writer.torn_bytes_removed,
            reopened=self._writer.reopened,
            spans_left_behind=self._writer.lines_left_behind,
            changed_underneath=self._writer.changed_underneath,
            spans_lost=self._writer.lines_lost,
            moved_aside=tuple(map(str, self._writer.moved_aside)),
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            lines = []
            for span in spans:
                try:
                    lines.append(self._encoder.encode(span))
                except Exception:
                    self._dropped += 1
                    _logger.exception("agent-replay tape: could not encode span %r; it is dropped", span.name)
            with self._lock:
                return self._write(lines)
        except Exception:  # export must never raise into the application
            _logger.exception("agent-replay tape: export to %s failed", self.path)
            return SpanExportResult.FAILURE

    def _write(self, lines: list[bytes]) -> SpanExportResult:
        if self._pending:
            lines = self._pending + lines
        if not lines:
            return SpanExportResult.SUCCESS
        writer = self._writer
        reopened, left_behind = writer.reopened, writer.lines_left_behind
        changed, lost, aside = writer.changed_underneath, writer.lines_lost, len(writer.moved_aside)
        try:
            writer.append(lines)
        except AppendError as err:
            return self._failed(lines, err)
        finally:
            if writer.reopened != reopened:
                self._warn_reopened(writer.lines_left_behind - left_behind)
            if writer.changed_underneath != changed:
                self._warn_changed(writer.lines_lost - lost, writer.moved_aside[aside:])
        self._written += len(lines)
        if self._failing:
            _logger.warning(
                "agent-replay tape: %s is writable again; the %d span(s) kept in memory are written, "
                "%d were dropped while it was not",
                self.path,
                len(self._pending),
                self._failing_dropped,
            )
            self._failing = False
            self._failing_dropped = 0
        self._pending = []
        self._pending_bytes = 0
        return SpanExportResult.SUCCESS

    def _warn_reopened(self, left_behind: int) -> None:
        lost = f"; {left_behind} span(s) written before went to the old file" if left_behind else ""
        if self._writer.reopen_reason == "deleted":
            what = "was deleted or moved away; it is created again and"
        else:
            what = "was replaced by another file, which"
            lost += " (they are in the new one only if whoever replaced it copied them)" if left_behind else ""
        _logger.warning("agent-replay tape: %s %s receives the spans from now on%s", self.path, what, lost)

    def _warn_changed(self, lost: int, aside: list[Path]) -> None:
        what = "cut short" if self._writer.change_reason == "truncated" else "overwritten"
        where = (
            f"; what it held was not a tape any more, so it was moved to {', '.join(map(str, aside))} and the "
            "spans go on into a new file at the path"
            if aside
            else "; the spans go on after what is left"
        )
        _logger.warning(
            "agent-replay tape: %s was %s by another process while it was being written: %d span(s) written "
            "before are no longer on it%s. Record those runs again, and leave a tape alone while it is being recorded",
            self.path,
            what,
            lost,
            where,
        )

    def _failed(self, lines: list[bytes], err: AppendError) -> SpanExportResult:
        """Keep the lines that are not whole on the file (from the torn one on) for the next try."""
        self._failures += 1
        self._written += err.lines_done
        if err.lines_done == len(lines):  # only the fsync failed
            self._pending = []
            self._pending_bytes = 0
            _logger.warning(
                "agent-replay tape: wrote %d span(s) to %s but fsync failed (%s)", len(lines), self.path, err
            )
            return SpanExportResult.FAILURE
        dropped = self._keep_pending(lines[err.lines_done :])
        if not self._failing:
            self._failing = True
            _logger.warning(
                "agent-replay tape: could not write %d of %d span(s) to %s (%s); kept in memory and "
                "retried on the next export, without writing any span twice",
                len(lines) - err.lines_done,
                len(lines),
                self.path,
                err,
            )
        if dropped and not self._failing_dropped:  # once per failure; the counters and the recovery tell the rest
            _logger.warning(
                "agent-replay tape: more than %d bytes of spans wait for %s; the oldest are dropped "
                "(%d now), counted in stats.spans_dropped",
                self._max_pending_bytes,
                self.path,
                dropped,
            )
        self._failing_dropped += dropped
        return SpanExportResult.FAILURE

    def _keep_pending(self, lines: list[bytes]) -> int:
        """Keep ``lines`` pending, dropping the oldest beyond the byte budget; returns how many were dropped."""
        total = sum(map(len, lines))
        # A line the writer tore stays first: the retry finishes it rather than leaving it half written.
        first = 1 if self._writer.has_torn_line else 0
        cut = first
        while cut < len(lines) and total > self._max_pending_bytes:
            total -= len(lines[cut])
            cut += 1
        dropped = cut - first
        self._dropped += dropped
        self._pending = lines[:first] + lines[cut:] if dropped else lines
        self._pending_bytes = total
        return dropped

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Retry pending lines and fsync; True when nothing is left pending."""
        if self._shutdown:
            return not self._pending
        try:
            with self._lock:
                if self._pending:
                    self._write([])
                if not self._pending:
                    self._writer.sync()
                return not self._pending
        except Exception:
            _logger.exception("agent-replay tape: flush of %s failed", self.path)
            return False

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self.force_flush()
        with self._lock:
            self._shutdown = True
            if self._pending:
                self._dropped += len(self._pending)
                _logger.error(
                    "agent-replay tape: %d span(s) could not be written to %s before shutdown and are dropped",
                    len(self._pending),
                    self.path,
                )
                self._pending = []
            try:
                self._writer.close()
            except Exception:
                _logger.exception("agent-replay tape: closing %s failed", self.path)


class TapeSpanProcessor(SpanProcessor):
    """Exports each ended span at once, in the thread that ended it: nothing is queued.

    ``accept`` (optional) chooses the spans to export, e.g. only those of recorded runs.
    Errors never reach the application.
    """

    def __init__(self, exporter: SpanExporter, *, accept: Callable[[ReadableSpan], bool] | None = None) -> None:
        self.exporter = exporter
        self._accept = accept
        self._done = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self._done:
            return
        try:
            if self._accept is None or self._accept(span):
                self.exporter.export((span,))
        except Exception:
            _logger.exception("agent-replay tape: span processor failed")

    def shutdown(self) -> None:
        if not self._done:
            self._done = True
            self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)
