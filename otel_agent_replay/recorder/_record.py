"""``record(path)``: append the runs started inside it to a tape.

The spans reach the tape through a span processor of our own that writes each span
as it ends, in the thread that ends it: nothing waits in a queue that could drop it.
One such processor (the router) is added once to the application's tracer provider
and sends each span to the recording its run was started in; the provider is never
replaced. When the application has no SDK provider, ``record`` sets one up.

With ``store=`` each run is also ingested into an evidence store as it finishes (see
``_StoreSink``): a store that fails never fails the agent; the tape keeps everything.

The recording's spans can also go to an OTLP endpoint (``otlp=``, or the
``OTEL_EXPORTER_OTLP_*`` variables when ``record`` set up the provider): see ``otlp``. That
side is batched and bounded, and never holds up the tape or the agent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import threading
import uuid
import warnings
import weakref
from collections.abc import Iterable, Mapping
from contextvars import Token
from pathlib import Path
from typing import Union

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.agent_replay_tape import ExporterStats, TapeSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from otel_agent_replay.backends import OtlpOption, OtlpProcessor, OtlpStats, otlp_processor
from otel_agent_replay.capture import DEFAULT_REDACTOR, BlobStore, Capture, KeyRules, Limits, Redactor
from otel_agent_replay.core import ConfigurationError, OtlpWarning, RecordingWarning, Scope, project_settings
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import (
    current_recording,
    recording_ended,
    recording_started,
    warn_if_replay_active,
)
from otel_agent_replay.integrations import HttpActivation, HttpRoute, activate
from otel_agent_replay.store import Store, open_store
from otel_agent_replay.tape import Tape, load_tape

from ._foreign import ResourceRedaction, is_ours, is_run_span, redacted_span

StoreOption = Union[Store, str, "os.PathLike[str]", None]
"""``record(store=...)``: a ``Store``, a SQLite path or a ``postgresql://`` URL, or None."""


class _StoreSink:
    """Ingests each run of a recording into an evidence store when its run span ends.

    A run's spans are kept in memory until its run span ends, then written to a temporary tape,
    loaded as the loader reads any tape, and ingested (idempotent). Spans left when the recording
    closes (a run still open, a step that ended after its run) are ingested then. Any failure is a
    ``RecordingWarning`` naming the run and the command that ingests the tape later.
    """

    def __init__(self, store: Store, owned: bool, tape: Path) -> None:
        self.store = store
        self.owned = owned
        self.tape = tape
        self.ingested = 0
        """Runs ingested so far."""
        self.failures = 0
        self._spans: dict[str, list[ReadableSpan]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._tmp = tempfile.TemporaryDirectory(prefix="otel-agent-replay-ingest-")

    def on_end(self, span: ReadableSpan) -> None:
        attrs = span.attributes or {}
        run_id = attrs.get(A.RUN_ID)
        if not isinstance(run_id, str):
            return  # a user's own span inside a tool: on the tape, not a row of the store
        with self._lock:
            if self._closed:
                return  # a run that outlived its recording: the tape's exporter has closed too
            self._spans.setdefault(run_id, []).append(span)
            if attrs.get(A.GEN_AI_OPERATION_NAME) != A.OP_INVOKE_AGENT:
                return
            spans = self._spans.pop(run_id)
        self._ingest(run_id, spans)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            left = list(self._spans.items())
            self._spans.clear()
        for run_id, spans in left:
            self._ingest(run_id, spans)
        self._tmp.cleanup()
        if self.owned:
            with contextlib.suppress(Exception):  # closing a broken store must not fail the recording
                self.store.close()

    def _ingest(self, run_id: str, spans: list[ReadableSpan]) -> None:
        path = Path(self._tmp.name) / f"{uuid.uuid4().hex}.jsonl"  # runs may end in several threads at once
        try:
            exporter = TapeSpanExporter(path)
            exporter.export(spans)
            exporter.shutdown()
            loaded = load_tape(path)
            self.store.ingest(Tape(str(self.tape), loaded.runs, loaded.warnings))
            self.ingested += 1
        except Exception as exc:
            self.failures += 1
            warnings.warn(
                f"run {run_id} could not be ingested into the evidence store {self.store.location!r}: "
                f"{type(exc).__name__}: {str(exc).rstrip('.')}. The tape {self.tape} has it; ingest it later with: "
                f"otel-agent-replay ingest {self.tape} --db {self.store.location}",
                RecordingWarning,
                stacklevel=2,
            )
        finally:
            path.unlink(missing_ok=True)


class Recording:
    """An open recording: where its spans go and how values are captured."""

    def __init__(
        self,
        path: Path,
        exporter: TapeSpanExporter,
        capture: Capture,
        otlp: OtlpProcessor | None = None,
        sink: _StoreSink | None = None,
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
        """The patched HTTP transports this recording holds (``record(http_models=False)``: None)."""

    @property
    def store(self) -> Store | None:
        """The evidence store each finished run is ingested into (``record(store=...)``), or None."""
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


def _router_for(provider: TracerProvider) -> _Router:
    with _setup_lock:
        router = _routers.get(provider)
        if router is None:
            router = _Router()
            provider.add_span_processor(router)
            _routers[provider] = router
        return router


class record(Scope[Recording, tuple[Recording, Token[object | None]]]):
    """Append the runs started inside this block to the tape at ``path``.

    Options: ``redactor`` (a ``Redactor``; redaction is on by default), ``limits`` (a ``Limits``
    shared by many recordings) or ``max_string`` and ``max_result_bytes`` (size caps, winning over
    ``limits``), ``store_full_payloads`` (keep shortened values
    whole beside the tape, named by hash), ``fsync`` (fsync on exit and per write).
    On exit the tape is flushed and durable; what could not be written is reported.

    OTLP: ``otlp`` is an endpoint URL (``http://localhost:4318``), True (the
    ``OTEL_EXPORTER_OTLP_*`` variables, or OpenTelemetry's default endpoint), an OpenTelemetry
    ``SpanExporter``, or False; None (the default) follows the variables when ``record`` set up
    the tracer provider. ``otlp_content`` sends arguments, results and messages too (None: the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` switch); the tape always has them.
    On exit the OTLP side is flushed for at most ``otlp_flush_timeout`` seconds (at once when
    the endpoint refuses connections); spans it could not send are counted in
    ``Recording.otlp_stats`` and reported with an ``OtlpWarning``.

    ``store`` (a ``Store``, a SQLite path or a ``postgresql://`` URL) ingests each run into that
    evidence store as its run span ends (idempotent, as ``Store.ingest``); a store given as a
    path or URL is opened on entry and closed on exit. A store that cannot be opened or written
    never raises into the agent: a ``RecordingWarning`` says what failed, and the tape has the run.
    ``key_ignore``: tool (or ``"*"``) → argument paths left out of its call keys (the tape keeps
    them), on top of the tool's own ``key_ignore=`` and ``[tool.otel-agent-replay.key_ignore]``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        redactor: Redactor | None = None,
        limits: Limits | None = None,
        max_string: int | None = None,
        max_result_bytes: int | None = None,
        store_full_payloads: bool = False,
        fsync: bool = False,
        otlp: OtlpOption = None,
        otlp_content: bool | None = None,
        otlp_flush_timeout: float = 5.0,
        store: StoreOption = None,
        key_ignore: Mapping[str, Iterable[str]] | None = None,
        http_models: bool = True,
        http_routes: Iterable[HttpRoute] = (),
    ) -> None:
        super().__init__()
        if store is not None and not isinstance(store, (Store, str, os.PathLike)):
            raise ConfigurationError(f"record(store={store!r}): give a Store, a SQLite path or a postgresql:// URL")
        self.store = store
        self.path = Path(path)
        if self.path.is_dir():
            raise ConfigurationError(f"record({str(path)!r}): that is a folder; give the tape's file path")
        base = limits or Limits()
        limits = Limits(
            max_string=max_string if max_string is not None else base.max_string,
            max_result_bytes=max_result_bytes if max_result_bytes is not None else base.max_result_bytes,
        )
        if limits.max_string < 16 or limits.max_result_bytes < 64:
            raise ConfigurationError(f"size caps too small: {limits}; max_string >= 16, max_result_bytes >= 64")
        blobs = BlobStore(self.path.with_name(self.path.name + ".blobs")) if store_full_payloads else None
        self.key_ignore = dict(key_ignore or {})
        self.capture = Capture(redactor=redactor or DEFAULT_REDACTOR, limits=limits, blobs=blobs)
        self.fsync = fsync
        if not isinstance(otlp_flush_timeout, (int, float)) or otlp_flush_timeout < 0:
            raise ConfigurationError(f"record(otlp_flush_timeout={otlp_flush_timeout!r}): give seconds, 0 or more")
        self.otlp = otlp
        self.otlp_content = otlp_content
        self.otlp_flush_timeout = float(otlp_flush_timeout)
        self.http_models = http_models
        self.http_routes = tuple(http_routes)
        for route in self.http_routes:
            if not isinstance(route, HttpRoute):
                raise ConfigurationError(f"record(http_routes=[..., {route!r}]): give HttpRoute values")

    def _start(self) -> tuple[Recording, tuple[Recording, Token[object | None]]]:
        warn_if_replay_active(f"record({str(self.path)!r})")
        provider = ensure_provider()
        _router_for(provider)
        otlp = otlp_processor(
            self.otlp,
            provider_is_ours=provider in _ours,
            capture_content=self.otlp_content,
            flush_timeout=self.otlp_flush_timeout,
        )
        exporter = TapeSpanExporter(self.path, fsync=self.fsync)
        keys = KeyRules(project_settings().key_ignore).merged(self.key_ignore)
        rec = Recording(self.path, exporter, dataclasses.replace(self.capture, keys=keys), otlp, self._sink())
        token = current_recording.set(rec)
        recording_started(rec)
        rec.http = activate(self.http_routes) if self.http_models else None
        return rec, (rec, token)

    def _sink(self) -> _StoreSink | None:
        if self.store is None:
            return None
        if isinstance(self.store, Store):
            return _StoreSink(self.store, False, self.path)
        try:
            return _StoreSink(open_store(self.store), True, self.path)
        except Exception as exc:
            warnings.warn(
                f"record({str(self.path)!r}, store={os.fspath(self.store)!r}): the evidence store could not be "
                f"opened ({type(exc).__name__}: {str(exc).rstrip('.')}); recording to the tape only. "
                "Ingest it later with: "
                f"otel-agent-replay ingest {self.path} --db {os.fspath(self.store)}",
                RecordingWarning,
                stacklevel=4,
            )
            return None

    def _stop(self, entered: tuple[Recording, Token[object | None]], error: BaseException | None) -> None:
        rec, token = entered
        recording_ended(rec)
        if rec.http is not None:
            rec.http.close()
        current_recording.reset(token)
        rec.open = False
        rec.exporter.force_flush()
        rec.exporter.shutdown()
        if rec.sink is not None:
            rec.sink.close()
        lost = rec.stats.spans_dropped
        if lost:
            warnings.warn(
                f"{rec.path}: {lost} span(s) could not be written to the tape (see the log for why)",
                RecordingWarning,
                stacklevel=3,
            )
        if rec.stats.reopened:
            warnings.warn(
                f"{rec.path} was deleted or replaced while it was being recorded ({rec.stats.reopened} time(s)); "
                f"it was opened again, and {rec.stats.spans_left_behind} span(s) written before that went to the "
                "file it replaced: record again to have the whole run in one tape",
                RecordingWarning,
                stacklevel=3,
            )
        if rec.otlp is not None:
            _close_otlp(rec, rec.otlp)


def _close_otlp(rec: Recording, otlp: OtlpProcessor) -> None:
    """Flush and close the OTLP side (bounded); warn about spans that did not get there."""
    stats = otlp.close()
    missing = stats.failed + stats.unconfirmed
    if not missing:
        return
    counts = [f"{stats.failed} failed"] if stats.failed else []
    if stats.unconfirmed:
        counts.append(f"{stats.unconfirmed} unanswered after {otlp.flush_timeout:g}s")
    why = f": {stats.last_error}" if stats.last_error else ""
    where = otlp.endpoint or "the OTLP exporter"
    target = otlp.endpoint or "URL"
    if otlp.endpoint and otlp.protocol == "grpc":
        target += " --protocol grpc"
    warnings.warn(
        f"OTLP export to {where}: {missing} of {stats.queued} span(s) were not confirmed "
        f"({', '.join(counts)}){why}. The tape {rec.path} has every span; send them later with: "
        f"otel-agent-replay push {rec.path} --endpoint {target}",
        OtlpWarning,
        stacklevel=4,
    )
