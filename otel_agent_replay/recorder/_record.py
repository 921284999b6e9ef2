"""``record(path)``: append the runs started inside it to a tape.

The spans reach the tape through a span processor of our own (``_routing``) that writes each span
as it ends, in the thread that ends it: nothing waits in a queue that could drop it.
One such processor (the router) is added once to the application's tracer provider
and sends each span to the recording its run was started in; the provider is never
replaced. When the application has no SDK provider, ``record`` sets one up.

With ``store=`` each run is also ingested into an evidence store as it finishes, off the agent's
thread (see ``_store_sink``): a store that fails or is busy never fails or holds the agent; the
tape keeps everything.

The recording's spans can also go to an OTLP endpoint (``otlp=``, or the
``OTEL_EXPORTER_OTLP_*`` variables when ``record`` set up the provider): see ``otlp``. That
side is batched and bounded, and never holds up the tape or the agent.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import warnings
from collections.abc import Iterable, Mapping
from contextvars import Token
from pathlib import Path
from typing import TYPE_CHECKING, Union

from opentelemetry.exporter.agent_replay_tape import TapeSpanExporter

from otel_agent_replay.capture import DEFAULT_REDACTOR, BlobStore, Capture, KeyRules, Limits, Redactor, StandIns
from otel_agent_replay.core import (
    DEFAULT_LOCK_TIMEOUT,
    ConfigurationError,
    OtlpWarning,
    RecordingWarning,
    Scope,
    SideEffect,
    SideEffectName,
    TapeLock,
    Writing,
    hold_tape,
    lock_timeout_seconds,
    project_settings,
)
from otel_agent_replay.instrumentation import (
    current_recording,
    current_replay,
    end_implicit_run,
    recording_ended,
    recording_started,
    warn_if_replay_active,
)
from otel_agent_replay.integrations import (
    HttpRoute,
    activate,
    mcp_side_effect_rules,
    side_effect_rules,
)
from otel_agent_replay.proxy import JoinedBlock, close_block, open_block

from ._routing import Recording, ensure_provider, router_for, set_up_here

if TYPE_CHECKING:  # imported where used: a replay (or a test that only replays) loads no store and no OTLP exporter
    from otel_agent_replay.backends import OtlpOption, OtlpProcessor
    from otel_agent_replay.store import Store

    from ._store_sink import StoreSink

_log = logging.getLogger(__name__)

StoreOption = Union["Store", str, "os.PathLike[str]", None]
"""``record(store=...)``: a ``Store``, a SQLite path or a ``postgresql://`` URL, or None."""


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
    evidence store as its run span ends (idempotent, as ``Store.ingest``), in a worker thread: a
    run's end waits for its ingest at most a second, and never behind a busy or locked store. A
    store given as a path or URL is opened by that worker and closed when it is done. On exit the
    worker gets 5 s to finish. A store that cannot be opened or written never raises into the agent:
    a ``RecordingWarning`` names the runs not stored (failed, or not yet stored on exit) and the
    ``otel-agent-replay ingest`` line that stores them from the tape.
    ``key_ignore``: tool (or ``"*"``) → argument paths left out of its call keys (the tape keeps
    them), on top of the tool's own ``key_ignore=`` and ``[tool.otel-agent-replay.key_ignore]``.

    ``agent``: the agent of the block's implicit run, the run that a step made outside every
    ``agent_run`` belongs to (default: the pytest test's name, else the script's).

    HTTP: every request made from a run's context, by any supported client, is a step (a model step when
    it matches a model route, else an HTTP step ``{METHOD} {host}{path}``); ``http=False`` records none,
    ``http_models=False`` makes model requests plain HTTP steps, ``http_routes`` adds model routes and
    ``http_side_effects`` (``"METHOD host/path"`` patterns → side effect) declares what a request does.
    ``mcp_side_effects`` (``"server/tool"`` patterns → side effect) declares an MCP tool's, over what its
    server's annotations say.

    One writer per tape: the block holds the tape's lock (``TAPE.lock`` beside it) across processes from
    its start to its end. A second process recording the same tape waits for it (a ``TapeWarning`` names
    the holder), at most ``lock_timeout`` seconds, then fails with a ``TapeError`` naming the holder.
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
        agent: str | None = None,
        http: bool = True,
        http_models: bool = True,
        http_routes: Iterable[HttpRoute] = (),
        http_side_effects: Mapping[str, SideEffect | SideEffectName] | None = None,
        mcp_side_effects: Mapping[str, SideEffect | SideEffectName] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        super().__init__()
        self.lock_timeout = lock_timeout_seconds(lock_timeout, "record")
        if store is not None and not isinstance(store, (str, os.PathLike)) and not _is_store(store):
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
        # one StandIns per recording: its key (never written) makes this tape's stand-ins
        self.capture = Capture(redactor=redactor or DEFAULT_REDACTOR, limits=limits, blobs=blobs, stand_ins=StandIns())
        self.fsync = fsync
        if not isinstance(otlp_flush_timeout, (int, float)) or otlp_flush_timeout < 0:
            raise ConfigurationError(f"record(otlp_flush_timeout={otlp_flush_timeout!r}): give seconds, 0 or more")
        self.otlp = otlp
        self.otlp_content = otlp_content
        self.otlp_flush_timeout = float(otlp_flush_timeout)
        if agent is not None and (not isinstance(agent, str) or not agent):
            raise ConfigurationError(
                f"record(agent={agent!r}): give the implicit run's agent name (a non-empty string)"
            )
        self.agent = agent
        self.http = http
        self.http_models = http_models
        self.http_routes = tuple(http_routes)
        for route in self.http_routes:
            if not isinstance(route, HttpRoute):
                raise ConfigurationError(f"record(http_routes=[..., {route!r}]): give HttpRoute values")
        self.http_side_effects = dict(side_effect_rules(http_side_effects))
        self.mcp_side_effects = dict(mcp_side_effect_rules(mcp_side_effects))

    def _start(self) -> tuple[Recording, tuple[Recording, Token[object | None]]]:
        warn_if_replay_active(f"record({str(self.path)!r})")
        lock = hold_tape(self.path, _RECORD, self.lock_timeout)
        try:
            return self._begin(lock)
        except BaseException:
            lock.release()
            raise

    def _begin(self, lock: TapeLock) -> tuple[Recording, tuple[Recording, Token[object | None]]]:
        provider = ensure_provider()
        router_for(provider)
        from otel_agent_replay.backends import otlp_processor

        otlp = otlp_processor(
            self.otlp,
            provider_is_ours=set_up_here(provider),
            capture_content=self.otlp_content,
            flush_timeout=self.otlp_flush_timeout,
        )
        exporter = TapeSpanExporter(self.path, fsync=self.fsync)
        keys = KeyRules(project_settings().key_ignore).merged(self.key_ignore)
        rec = Recording(self.path, exporter, dataclasses.replace(self.capture, keys=keys), otlp, self._sink())
        rec.lock = lock
        token = current_recording.set(rec)
        recording_started(rec)
        rec.agent = self.agent
        rec.http = (
            activate(
                self.http_routes,
                http_models=self.http_models,
                http_side_effects=self.http_side_effects,
                mcp_side_effects=self.mcp_side_effects,
            )
            if self.http
            else None
        )
        rec.children = open_block("record", str(self.path))
        if isinstance(current_replay.get(), JoinedBlock):  # a joined child's own record(): its calls are its own
            rec.unjoined = current_replay.set(None)
        return rec, (rec, token)

    def _sink(self) -> StoreSink | None:
        if self.store is None:
            return None
        from ._store_sink import StoreSink

        store = self.store
        if isinstance(store, os.PathLike):
            store = os.fspath(store)
        return StoreSink(store, self.path)

    def _stop(self, entered: tuple[Recording, Token[object | None]], error: BaseException | None) -> None:
        rec, _ = entered
        try:
            self._end(entered, error)
        finally:
            if rec.lock is not None:
                rec.lock.release()

    def _end(self, entered: tuple[Recording, Token[object | None]], error: BaseException | None) -> None:
        rec, token = entered
        if rec.children is not None:
            close_block(rec.children)  # the children's steps in flight end before the run does
        try:
            end_implicit_run(rec, error)  # before the block's end: its span reaches the tape
        except Exception:  # the exporter side never raises into the agent
            _log.exception("could not end the implicit run of %s", rec.path)
        recording_ended(rec)
        if rec.unjoined is not None:
            current_replay.reset(rec.unjoined)
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
                stacklevel=4,
            )
        if rec.stats.reopened:
            warnings.warn(
                f"{rec.path} was deleted or replaced while it was being recorded ({rec.stats.reopened} time(s)); "
                f"it was opened again, and {rec.stats.spans_left_behind} span(s) written before that went to the "
                "file it replaced: record again to have the whole run in one tape",
                RecordingWarning,
                stacklevel=4,
            )
        if rec.stats.changed_underneath:
            aside = rec.stats.moved_aside
            moved = f"; what another process left there was moved to {', '.join(aside)}" if aside else ""
            warnings.warn(
                f"{rec.path} was cut short or overwritten by another process while it was being recorded "
                f"({rec.stats.changed_underneath} time(s)): {rec.stats.spans_lost} span(s) written before are no "
                f"longer on it{moved}; every span written after that is on it. Record those runs again, and leave a "
                "tape alone while it is being recorded",
                RecordingWarning,
                stacklevel=4,
            )
        if rec.otlp is not None:
            _close_otlp(rec, rec.otlp)


_RECORD = Writing(
    "record()",
    "Wait for it to end (record(..., lock_timeout=SECONDS) waits longer), or give each process a tape of its "
    "own (under pytest-xdist, one per worker: the PYTEST_XDIST_WORKER variable names it)",
)


def _is_store(value: object) -> bool:
    from otel_agent_replay.store import Store

    return isinstance(value, Store)


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
        stacklevel=5,
    )
