"""``record(path)``: append the runs started inside it to a tape.

The spans reach the tape through a span processor of our own that writes each span
as it ends, in the thread that ends it: nothing waits in a queue that could drop it.
One such processor (the router) is added once to the application's tracer provider
and sends each span to the recording its run was started in; the provider is never
replaced. When the application has no SDK provider, ``record`` sets one up, with an
OTLP exporter (batched) when the ``OTEL_EXPORTER_OTLP_*`` variables ask for one.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from contextvars import Token
from pathlib import Path
from types import TracebackType

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.agent_replay_tape import ExporterStats, TapeSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from . import attributes as A
from .errors import ConfigurationError
from .payload import BlobStore, Limits
from .redact import DEFAULT_REDACTOR, Redactor
from .runtime import Capture, current_recording

OTLP_ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


class Recording:
    """An open recording: where its spans go and how values are captured."""

    def __init__(self, path: Path, exporter: TapeSpanExporter, capture: Capture) -> None:
        self.path = path
        self.exporter = exporter
        self.capture = capture
        self.open = True

    @property
    def stats(self) -> ExporterStats:
        """The tape exporter's counters (written, pending, dropped, failures)."""
        return self.exporter.stats

    def write(self, span: ReadableSpan) -> None:
        self.exporter.export((span,))


class _Router(SpanProcessor):
    """Sends the spans of recorded runs (and everything under them) to their recording."""

    def __init__(self) -> None:
        self._spans: dict[int, Recording] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        ctx = span.get_span_context()
        parent = span.parent
        rec = self._spans.get(parent.span_id) if parent is not None else None
        if rec is None:
            attrs = span.attributes
            if attrs and attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT and A.RUN_ID in attrs:
                found = current_recording.get()
                rec = found if isinstance(found, Recording) else None
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
_setup_lock = threading.Lock()


def otlp_exporter_from_env() -> SpanExporter | None:
    """An OTLP span exporter configured by the standard variables, or None when none is set."""
    if not any(os.environ.get(name) for name in OTLP_ENDPOINT_ENVS):
        return None
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        return Http()
    raise ConfigurationError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported; use 'http/protobuf' or 'grpc'"
    )


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
        otlp = otlp_exporter_from_env()
        if otlp is not None:
            provider.add_span_processor(BatchSpanProcessor(otlp))
        trace.set_tracer_provider(provider)
        current = trace.get_tracer_provider()
        if not isinstance(current, TracerProvider):  # pragma: no cover - another thread won the race
            raise ConfigurationError("the global tracer provider could not be set up")
        return current


def _router_for(provider: TracerProvider) -> _Router:
    with _setup_lock:
        router = _routers.get(provider)
        if router is None:
            router = _Router()
            provider.add_span_processor(router)
            _routers[provider] = router
        return router


class record:
    """Append the runs started inside this block to the tape at ``path``.

    Options: ``redactor`` (a ``Redactor``; redaction is on by default), ``max_string``
    and ``max_result_bytes`` (size caps), ``store_full_payloads`` (keep shortened values
    whole beside the tape, named by hash), ``fsync`` (fsync on exit and per write).
    On exit the tape is flushed and durable; what could not be written is reported.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        redactor: Redactor | None = None,
        max_string: int | None = None,
        max_result_bytes: int | None = None,
        store_full_payloads: bool = False,
        fsync: bool = False,
    ) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise ConfigurationError(f"record({str(path)!r}): that is a folder; give the tape's file path")
        defaults = Limits()
        limits = Limits(
            max_string=max_string if max_string is not None else defaults.max_string,
            max_result_bytes=max_result_bytes if max_result_bytes is not None else defaults.max_result_bytes,
        )
        if limits.max_string < 16 or limits.max_result_bytes < 64:
            raise ConfigurationError(f"size caps too small: {limits}; max_string >= 16, max_result_bytes >= 64")
        blobs = BlobStore(self.path.with_name(self.path.name + ".blobs")) if store_full_payloads else None
        self.capture = Capture(redactor=redactor or DEFAULT_REDACTOR, limits=limits, blobs=blobs)
        self.fsync = fsync
        self._stack: list[tuple[Recording, Token[object | None]]] = []

    def __enter__(self) -> Recording:
        provider = ensure_provider()
        _router_for(provider)
        exporter = TapeSpanExporter(self.path, fsync=self.fsync)
        rec = Recording(self.path, exporter, self.capture)
        token = current_recording.set(rec)
        self._stack.append((rec, token))
        return rec

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        rec, token = self._stack.pop()
        current_recording.reset(token)
        rec.open = False
        rec.exporter.force_flush()
        rec.exporter.shutdown()
        lost = rec.stats.spans_dropped
        if lost:
            warnings.warn(
                f"{rec.path}: {lost} span(s) could not be written to the tape (see the log for why)",
                RuntimeWarning,
                stacklevel=2,
            )

    async def __aenter__(self) -> Recording:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)
