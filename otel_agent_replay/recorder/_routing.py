"""Where a recorded span goes: the router, one span processor added once to the application's tracer
provider (never replaced), sends each span of a recorded run, and everything under it, to the
``Recording`` its run was started in, which writes it to the tape as it ends, in the thread that ends
it, then to its OTLP side and its store. ``ensure_provider`` sets up an SDK provider when the
application has none."""

from __future__ import annotations

import threading
import weakref
from contextvars import Token
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.agent_replay_tape import ExporterStats, TapeSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from otel_agent_replay.capture import Capture
from otel_agent_replay.core import ConfigurationError, TapeLock
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import current_recording
from otel_agent_replay.integrations import HttpActivation
from otel_agent_replay.proxy import BlockChildren, Spawner

from ._foreign import ResourceRedaction, is_ours, is_run_span, redacted_span

if TYPE_CHECKING:
    from otel_agent_replay.backends import OtlpProcessor, OtlpStats
    from otel_agent_replay.store import Store

    from ._store_sink import StoreSink

__all__ = ["Recording", "ensure_provider", "router_for", "set_up_here"]


class Recording:
    """An open recording: where its spans go and how values are captured."""

    def __init__(
        self,
        path: Path,
        exporter: TapeSpanExporter,
        capture: Capture,
        otlp: OtlpProcessor | None = None,
        sink: StoreSink | None = None,
    ) -> None:
        self.path = path
        self.exporter = exporter
        self.capture = capture
        self.otlp = otlp
        """The OTLP side of this recording, or None when its spans go to the tape only."""
        self.sink = sink
        self._resource = ResourceRedaction(capture.redactor)
        self.open = True
        self.http: HttpActivation | None = None
        """The patched HTTP capture points this recording holds (``record(http=False)``: None)."""
        self.agent: str | None = None
        """The agent of the block's implicit run (``record(agent=...)``; None: the test's or script's name)."""
        self.otel_context = otel_context.get_current()
        """The OpenTelemetry context the block was entered in: the implicit run's parent."""
        self.lock: TapeLock | None = None
        """The tape's one-writer lock, held from the block's start to its end."""
        self.children: tuple[BlockChildren, Token[Spawner | None]] | None = None
        """What processes started from the block get: the proxy, the channel of joined children (``proxy``)."""
        self.unjoined: Token[Any] | None = None
        """In a process that joined its parent's block (``proxy.JoinedBlock``), this block's calls are its own."""

    @property
    def store(self) -> Store | None:
        """The evidence store each finished run is ingested into (``record(store=...)``), or None (also for a
        store given by location until the recording's worker has opened it)."""
        return None if self.sink is None else self.sink.store

    @property
    def stats(self) -> ExporterStats:
        """The tape exporter's counters (written, pending, dropped, failures)."""
        return self.exporter.stats

    @property
    def otlp_stats(self) -> OtlpStats | None:
        """The OTLP counters (queued, exported, failed, unconfirmed, last error), or None without OTLP."""
        return None if self.otlp is None else self.otlp.stats

    def write(self, span: ReadableSpan) -> None:
        """Append a finished span to the tape, then queue it for OTLP (which never blocks).

        The application's own spans are redacted first (the SDK's are redacted as they are made),
        then every span's resource (once per resource object; a clean one costs nothing more).
        """
        if not is_ours(span) or is_run_span(span):
            # the run span too: the application may have set attributes on it (redaction is idempotent)
            span = redacted_span(span, self.capture.redactor)
        span = self._resource(span)
        self.exporter.export((span,))
        if self.otlp is not None:
            self.otlp.on_end(span)
        if self.sink is not None:
            self.sink.on_end(span)


class _Router(SpanProcessor):
    """Sends the spans of recorded runs (and everything under them) to their recording."""

    def __init__(self) -> None:
        self._spans: dict[int, Recording] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        ctx = span.get_span_context()
        parent = span.parent
        rec = self._spans.get(parent.span_id) if parent is not None else None
        if rec is None:
            # a run span starts a recorded run only inside a recording: the context is asked first (a replay
            # span, or any span outside a recording, is not looked into)
            found = current_recording.get()
            if isinstance(found, Recording):
                attrs = span.attributes
                if attrs and attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT and A.RUN_ID in attrs:
                    rec = found
        if rec is not None and rec.open:
            self._spans[ctx.span_id] = rec

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.get_span_context()
        if ctx is None:
            return
        rec = self._spans.pop(ctx.span_id, None)
        if rec is not None:
            rec.write(span)

    def shutdown(self) -> None:
        self._spans.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_routers: weakref.WeakKeyDictionary[TracerProvider, _Router] = weakref.WeakKeyDictionary()
_ours: weakref.WeakSet[TracerProvider] = weakref.WeakSet()
"""Providers ``record`` set up itself: only for these do the OTLP variables add an OTLP side."""
_setup_lock = threading.Lock()


def ensure_provider() -> TracerProvider:
    """The application's SDK tracer provider, or a new one set up as the global provider."""
    with _setup_lock:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            return current
        if not isinstance(current, trace.ProxyTracerProvider):
            raise ConfigurationError(
                f"the application's tracer provider is a {type(current).__qualname__}, not the "
                "OpenTelemetry SDK's TracerProvider, so record() cannot add its tape processor to it; "
                "use opentelemetry.sdk.trace.TracerProvider"
            )
        provider = TracerProvider(resource=Resource.create())
        trace.set_tracer_provider(provider)
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):  # pragma: no cover - another thread won the race
            raise ConfigurationError("the global tracer provider could not be set up")
        if current is provider:
            _ours.add(provider)
        return current


def router_for(provider: TracerProvider) -> None:
    """Add the router to ``provider`` once (a provider keeps its processors: it is never replaced)."""
    with _setup_lock:
        router = _routers.get(provider)
        if router is None:
            router = _Router()
            provider.add_span_processor(router)
            _routers[provider] = router


def set_up_here(provider: TracerProvider) -> bool:
    """Whether ``record`` set ``provider`` up itself (``ensure_provider``): only then do the OTLP variables
    add an OTLP side to a recording."""
    return provider in _ours
