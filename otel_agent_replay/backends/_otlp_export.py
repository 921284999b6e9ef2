"""OTLP export for ``record()``: the same spans that reach the tape, sent to a backend on the side.

The tape is the source of truth and never waits for the network. The OTLP side is OpenTelemetry's
own ``BatchSpanProcessor`` around OpenTelemetry's OTLP exporter (so ``OTEL_EXPORTER_OTLP_*``
headers, timeouts, certificates and compression all apply), behind two guards of ours:

- ``GuardedExporter`` never raises into the SDK, counts what was and was not exported
  (``OtlpStats``), logs the first failure once, stops trying for a while after a failure (so an
  endpoint that is down costs neither time nor a log line per batch), and removes the content
  attributes (``attributes.CONTENT_ATTRIBUTES``) unless the GenAI content switch
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is on (see ``otlp_config``);
- ``OtlpProcessor.close`` bounds the flush at the end of a recording: it gives up at once when the
  endpoint refuses connections and after ``flush_timeout`` seconds when it is slow, then aborts the
  exporter's retries, so neither the agent nor the process exit waits on a broken backend.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Status

from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.core import attributes as A

__all__ = ["GuardedExporter", "OtlpProcessor", "OtlpStats", "span_with", "strip_content"]

_COOL_DOWN_FIRST = 5.0  # seconds without export attempts after a failure, doubling up to the max
_COOL_DOWN_MAX = 60.0
_PROBE_AFTER = 0.2  # a flush still running after this long checks that the endpoint accepts connections
_ABORT_WAIT = 0.5  # after aborting the retries, how long close() waits for the flush to count its spans
_log = logging.getLogger("otel_agent_replay.otlp")


def strip_content(span: ReadableSpan) -> ReadableSpan:
    """The span without its content attributes (the same object when it has none)."""
    attrs = span.attributes
    if not attrs or not any(key in A.CONTENT_ATTRIBUTES for key in attrs):
        return span
    return span_with(span, attributes={key: value for key, value in attrs.items() if key not in A.CONTENT_ATTRIBUTES})


def span_with(
    span: ReadableSpan,
    *,
    name: str | None = None,
    resource: Resource | None = None,
    attributes: Mapping[str, Any] | None = None,
    events: Sequence[Event] | None = None,
    links: Sequence[Link] | None = None,
    status: Status | None = None,
) -> ReadableSpan:
    """A copy of a finished span with the parts given replaced (the SDK's spans are read-only)."""
    return ReadableSpan(
        name=span.name if name is None else name,
        context=span.get_span_context(),
        parent=span.parent,
        resource=span.resource if resource is None else resource,
        attributes=span.attributes if attributes is None else attributes,
        events=span.events if events is None else events,
        links=span.links if links is None else links,
        kind=span.kind,
        status=span.status if status is None else status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


@dataclass(frozen=True)
class OtlpStats:
    """What happened to the spans handed to the OTLP side (counts of spans unless named otherwise); a snapshot."""

    queued: int = 0
    """Handed to the batch processor."""
    exported: int = 0
    """Accepted by the endpoint."""
    failed: int = 0
    """Given up: the export failed, or was skipped while the endpoint was down."""
    failed_exports: int = 0
    """Failed (or skipped) export calls (batches)."""
    content_stripped: int = 0
    """Spans sent without their content attributes (the content switch was off)."""
    last_error: str | None = None

    @property
    def unconfirmed(self) -> int:
        """Queued spans neither exported nor failed (yet): still in the queue or in flight."""
        return max(0, self.queued - self.exported - self.failed)


@dataclass
class _Counts:
    """The OTLP side's live counters (``OtlpStats`` is their snapshot)."""

    queued: int = 0
    exported: int = 0
    failed: int = 0
    failed_exports: int = 0
    content_stripped: int = 0
    last_error: str | None = None


class GuardedExporter(SpanExporter):
    """Wraps an OTLP exporter: strips content when off, counts, never raises, pauses after failures."""

    def __init__(self, inner: SpanExporter, endpoint: str, *, capture_content: bool) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.capture_content = capture_content
        self._counts = _Counts()
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._cool_down = _COOL_DOWN_FIRST
        self._warned = False
        self._closed = False
        self._diagnosed = False

    @property
    def stats(self) -> OtlpStats:
        """A snapshot of the counters."""
        return OtlpStats(**dataclasses.asdict(self._counts))

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export a batch; failures are counted and logged (once), never raised."""
        count = len(spans)
        if self._closed or time.monotonic() < self._down_until:
            why = "the recording has ended" if self._closed else "the endpoint failed recently"
            self._failed(count, f"skipped: {why}")
            return SpanExportResult.FAILURE
        batch = spans
        if not self.capture_content:
            batch = [strip_content(span) for span in spans]
            stripped = sum(1 for before, after in zip(spans, batch, strict=True) if before is not after)
            if stripped:
                with self._lock:
                    self._counts.content_stripped += stripped
        try:
            result = self.inner.export(batch)
        except Exception as exc:  # an exporter bug must not reach the agent
            self._failed(count, f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self._counts.exported += count
                self._cool_down = _COOL_DOWN_FIRST
            return result
        self._failed(count, "the OTLP exporter reported a failure (its log above says why)")
        return SpanExportResult.FAILURE

    def _failed(self, count: int, why: str) -> None:
        with self._lock:
            self._counts.failed += count
            self._counts.failed_exports += 1
            if not why.startswith("skipped"):
                if not self._diagnosed:  # a reason found by probing the endpoint says more
                    self._counts.last_error = why
                self._down_until = time.monotonic() + self._cool_down
                self._cool_down = min(self._cool_down * 2, _COOL_DOWN_MAX)
            first = not self._warned
            self._warned = True
        if first and not self._closed:
            _log.warning(
                "OTLP export to %s failed (%s): %d span(s) not sent. The agent goes on and the tape "
                "keeps every span; check that the backend is up, or push the tape later "
                "(otel-agent-replay push TAPE --endpoint URL)",
                self.endpoint,
                why,
                count,
            )

    def count_queued(self) -> None:
        """Count one span handed to the batch processor."""
        with self._lock:
            self._counts.queued += 1

    def note_error(self, why: str) -> None:
        """Remember why the endpoint is failing (for the warning at the end of the recording)."""
        with self._lock:
            self._counts.last_error = why
            self._diagnosed = True

    def shutdown(self) -> None:
        """Stop exporting and abort the inner exporter's retries (once)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.inner.shutdown()
        except Exception as exc:
            _log.debug("OTLP exporter shutdown raised %s", exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here."""
        return True


class OtlpProcessor(SpanProcessor):
    """A ``BatchSpanProcessor`` around a ``GuardedExporter``, with a bounded close.

    ``on_end`` only queues the span (it never blocks); ``close`` flushes for at most
    ``flush_timeout`` seconds (at once when the endpoint refuses connections) and shuts down.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        endpoint: str,
        *,
        capture_content: bool,
        flush_timeout: float = 5.0,
        protocol: str = "http/protobuf",
    ) -> None:
        if flush_timeout < 0:
            raise ConfigurationError(f"otlp_flush_timeout={flush_timeout!r}: give seconds, 0 or more")
        self.guard = GuardedExporter(exporter, endpoint, capture_content=capture_content)
        self.endpoint = endpoint
        """The traces endpoint ("" for an exporter given as an object)."""
        self.protocol = protocol
        self.flush_timeout = flush_timeout
        self._batch = BatchSpanProcessor(self.guard)
        self._closed = False

    @property
    def stats(self) -> OtlpStats:
        """The counters now."""
        return self.guard.stats

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the span for export; never blocks."""
        if self._closed or not (span.context and span.context.trace_flags.sampled):
            return
        self.guard.count_queued()
        self._batch.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export what is queued, waiting at most ``timeout_millis``."""
        return self._flush(timeout_millis / 1000).is_set()

    def _flush(self, timeout: float) -> threading.Event:
        """Flush in a helper thread; wait until done, refused (checked early) or ``timeout``."""
        done = threading.Event()

        def flush() -> None:
            try:
                self._batch.force_flush()
            finally:
                done.set()

        threading.Thread(target=flush, name="agent-replay-otlp-flush", daemon=True).start()
        if done.wait(min(timeout, _PROBE_AFTER)):
            return done
        problem = _connect_problem(self.endpoint)
        if problem is not None:
            self.guard.note_error(problem)
            return done
        done.wait(max(0.0, timeout - _PROBE_AFTER))
        return done

    def close(self) -> OtlpStats:
        """Flush (bounded), then shut down without waiting on a slow endpoint; the final counters."""
        if not self._closed:
            self._closed = True
            done = self._flush(self.flush_timeout)
            self.guard.shutdown()  # aborts the exporter's retries; a request in flight runs out alone
            done.wait(_ABORT_WAIT)  # a refused endpoint's retry loop ends at once: count its spans
            # The SDK's shutdown joins its worker for up to 30 s, which may wait on a request in
            # flight to a slow endpoint: let it finish on its own.
            closer = threading.Thread(target=self._batch.shutdown, name="agent-replay-otlp-close", daemon=True)
            closer.start()
            closer.join(_ABORT_WAIT)
        return self.stats

    def shutdown(self) -> None:
        """Same as ``close``."""
        self.close()


def _connect_problem(endpoint: str, timeout: float = 0.5) -> str | None:
    """Why a TCP connection to the endpoint's host and port fails, or None when it opens (or is unknown)."""
    if not endpoint:
        return None
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    host = parts.hostname or "localhost"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"bad port in {endpoint!r}"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"cannot connect to {host}:{port}: {exc.strerror or exc}"
