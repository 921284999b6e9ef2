"""``replay(tape)``: every ``@tool`` and ``@model_call`` answered from the tape.

Inside the block each decorated call is served by a double: the call key of its
redacted, canonical arguments is looked up among the unconsumed recorded steps of the
run being replayed (hit); a recorded step of that tool at the same position with other
arguments is drift; neither is a miss. A tool that is not read-only never runs. Replay
emits its own run and step spans, linked to the recorded ones.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterable, Mapping
from contextvars import Token
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_agent_replay.capture import Redactor
from otel_agent_replay.core import (
    ConfigurationError,
    DriftPolicy,
    DriftPolicyName,
    MissPolicy,
    MissPolicyName,
    ModelPolicy,
    ModelPolicyName,
    NetworkPolicy,
    NetworkPolicyName,
    OutsidePolicy,
    OutsidePolicyName,
    Pace,
    PaceName,
    RecordMode,
    RecordModeName,
    Scope,
    SideEffect,
    SideEffectName,
    SideEffectPolicy,
    SideEffectPolicyName,
    StalePolicy,
    StalePolicyName,
    TapeLock,
    Then,
    ThenName,
    project_settings,
)
from otel_agent_replay.instrumentation import (
    agent_commit,
    current_replay,
    replay_ended,
    replay_started,
    warn_if_replay_active,
)
from otel_agent_replay.integrations import HttpActivation, HttpRoute, activate
from otel_agent_replay.proxy import BlockChildren, Spawner, close_block, open_block
from otel_agent_replay.seal import (
    install_child_watch,
    install_network_guard,
    install_trust_deferral,
    uninstall_child_watch,
    uninstall_network_guard,
    uninstall_trust_deferral,
)
from otel_agent_replay.tape import Tape

from . import _heap as heap
from . import _loading as tapes
from ._messages import Hints
from ._options import Overrides, ReplayOptions
from ._session import ReplaySession

if TYPE_CHECKING:
    from otel_agent_replay.recorder import record


_DEFAULTS = ReplayOptions()


@dataclass(frozen=True, slots=True)
class _Entered:
    """What one entry of a replay block needs at its end."""

    session: ReplaySession
    token: Token[Any]
    recorder: record | None
    temp: Path | None
    http: HttpActivation | None = None
    still: bool = False
    """Whether this replay holds the heap still (``_heap``: a large tape)."""
    lock: TapeLock | None = None
    """The tape's one-writer lock, held to the block's end by a mode that writes the tape."""
    children: tuple[BlockChildren, Token[Spawner | None]] | None = None
    """What processes started from the block get: the proxy, the channel of joined children (``proxy``)."""


class replay(Scope[ReplaySession, _Entered]):
    """Replay the agent runs on a tape: every ``@tool`` and ``@model_call`` served from it.

    A context manager (``with`` / ``async with``, yielding the ``ReplaySession``) and a decorator.

    :param source: a tape path, or a loaded ``Tape``.
    :param options: a ``ReplayOptions`` shared by many replays; each keyword below that is given
        (not None) wins over the same field of it.
    :param run_id: replay only this recorded run (default: all, in order, as the agent starts them).
    :param trace_id: replay only the runs of this trace.
    :param mode: ``"none"`` (strict), ``"once"`` (record when the tape is missing), ``"new_episodes"``
        (read-only misses run live and are appended) or ``"all"`` (always record).
    :param side_effects: ``"stub"`` serves the recorded results of every tool that is not read-only
        (default ``"refuse"``: ``SideEffectRefused``).
    :param stub: tools that are not read-only whose recorded results are served.
    :param fallbacks: tool → a fake that serves its misses.
    :param overrides: tool (or ``(tool, n)``) → a value or exception served instead of the recorded result.
    :param max_age: seconds or a timedelta: an older tape fails as ``TapeStale``.
    :param allow_unused: let recorded steps go unused.
    :param models: ``"live"`` runs model calls for real while tools stay replayed.
    :param spans: False emits no replay spans.
    :param declare: side effects for tools that declared none.
    :param stale_versions: ``"error"`` fails on a tool whose version changed (default ``"warn"``).
    :param redactor: the redactor the tape was recorded with.
    :param on_miss: ``"error_result"`` answers a tool call the tape does not have with
        ``{"error": "unexpected_tool_call", "tool": name}`` instead of raising ``TapeMiss``
        (an out-of-bounds replay: counted in ``out_of_bounds_calls``; the tool never runs).
    :param on_drift: ``"count"`` answers a tool call that drifted (other arguments than recorded at its
        position) as a repetition does, counted in ``drift_events``, instead of raising ``TapeDrift``:
        a read-only tool by its fallback or the out-of-bounds answer, a stubbed one by its recorded call
        at that position (see ``ReplayOptions.on_drift``).
    :param hints: how the errors spell their fixes (the pytest plugin passes its own).
    :param outside_calls: a decorated call from a thread or task that does not carry the replay's context
        (started without ``contextvars.copy_context().run``, or before the block) is refused (``"refuse"``,
        the default); ``"read_only"`` lets read-only tools run live there.
    :param key_ignore: tool (or ``"*"``) → argument paths left out of its call key (``"messages[*].tool_call_id"``,
        ``"@model_volatile"``); recorded keys are recomputed from the recorded arguments, so no re-recording.
    :param pace: ``"recorded"`` hands out a recorded stream's chunks at their recorded offsets (default
        ``"none"``: at once).
    :param network: ``"allow"`` turns off the network guard of strict replays (default ``"block"``: a
        connection from the replay's context to a host not in ``allow_hosts`` raises ``NetworkBlocked``).
    :param allow_hosts: hosts the agent's code may connect to in a strict replay (default: loopback;
        an empty list blocks loopback too).
    :param allow_sockets: UNIX-domain socket paths the agent's code may connect and send to in a strict
        replay (default: every path while loopback is allowed by default, counted and warned like
        loopback; none once ``allow_hosts`` or ``allow_sockets`` is given).
    :param http: False leaves HTTP requests to the network guard alone (default: every request from the
        replay's context is answered from the tape, whatever the host, loopback included).
    :param http_models: False makes requests to model routes plain HTTP steps.
    :param http_routes: more model routes (``HttpRoute``), checked before the default ones.
    :param http_side_effects: ``"METHOD host/path"`` patterns → side effect of the HTTP steps they match.
    :param mcp_side_effects: ``"server/tool"`` patterns → an MCP tool's side effect, over what its server's
        annotations say (the server's name from its handshake; a tape's listing can only make a tool stricter).
    :param then: at the first divergence, ``"raise"`` (strict, the default), ``"live"`` (fork: that call and
        later ones run live; a tool that is not read-only stays under the side-effect policy) or ``"fallbacks"``
        (later calls go to the fakes of ``fallbacks=``); ``session.fork`` says where it forked.
    :param edit: step id (``"search#2"``) → a value (or exception) the recorded step answers with instead.
    :param fork_tape: where a replay with ``then=`` or ``edit=`` writes its run (default ``NAME.fork.jsonl``
        beside the tape).
    :param passthrough: hosts (``host`` or ``host:port``) whose HTTP goes live, never recorded, counted in
        ``passthrough_requests``.
    :param lock_timeout: how long a mode that writes the tape waits for another process writing it (default
        600 s; one writer per tape: ``once`` finds the tape that process recorded and replays it).
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Tape,
        options: ReplayOptions | None = None,
        *,
        run_id: str | None = None,
        trace_id: str | None = None,
        mode: RecordMode | RecordModeName | None = None,
        side_effects: SideEffectPolicy | SideEffectPolicyName | None = None,
        stub: Iterable[str] | None = None,
        fallbacks: Mapping[str, Callable[..., Any]] | None = None,
        overrides: Overrides | None = None,
        max_age: float | _dt.timedelta | None = None,
        allow_unused: bool | None = None,
        models: ModelPolicy | ModelPolicyName | None = None,
        spans: bool | None = None,
        declare: Mapping[str, SideEffect | SideEffectName] | None = None,
        stale_versions: StalePolicy | StalePolicyName | None = None,
        redactor: Redactor | None = None,
        on_miss: MissPolicy | MissPolicyName | None = None,
        on_drift: DriftPolicy | DriftPolicyName | None = None,
        hints: Hints | None = None,
        outside_calls: OutsidePolicy | OutsidePolicyName | None = None,
        key_ignore: Mapping[str, Iterable[str]] | None = None,
        pace: Pace | PaceName | None = None,
        network: NetworkPolicy | NetworkPolicyName | None = None,
        allow_hosts: Iterable[str] | None = None,
        allow_sockets: Iterable[str | os.PathLike[str]] | None = None,
        http: bool | None = None,
        http_models: bool | None = None,
        http_routes: Iterable[HttpRoute] | None = None,
        http_side_effects: Mapping[str, SideEffect | SideEffectName] | None = None,
        mcp_side_effects: Mapping[str, SideEffect | SideEffectName] | None = None,
        passthrough: Iterable[str] | None = None,
        then: Then | ThenName | None = None,
        edit: Mapping[str, Any] | None = None,
        fork_tape: str | os.PathLike[str] | None = None,
        lock_timeout: float | None = None,
    ) -> None:
        super().__init__()
        given = {
            "run_id": run_id,
            "trace_id": trace_id,
            "mode": mode,
            "side_effects": side_effects,
            "stub": stub,
            "fallbacks": fallbacks,
            "overrides": overrides,
            "max_age": max_age,
            "allow_unused": allow_unused,
            "models": models,
            "spans": spans,
            "declare": declare,
            "stale_versions": stale_versions,
            "redactor": redactor,
            "on_miss": on_miss,
            "on_drift": on_drift,
            "hints": hints,
            "outside_calls": outside_calls,
            "key_ignore": key_ignore,
            "pace": pace,
            "network": network,
            "allow_hosts": allow_hosts,
            "allow_sockets": allow_sockets,
            "http": http,
            "http_models": http_models,
            "http_routes": None if http_routes is None else tuple(http_routes),
            "http_side_effects": http_side_effects,
            "mcp_side_effects": mcp_side_effects,
            "passthrough": passthrough,
            "then": then,
            "edit": edit,
            "fork_tape": fork_tape,
            "lock_timeout": lock_timeout,
        }
        if options is not None and not isinstance(options, ReplayOptions):
            raise ConfigurationError(f"replay(options={options!r}): give a ReplayOptions (or use the keywords)")
        base = options or _DEFAULTS  # immutable: one made at import, not one per replay
        self.options = base.replace(**{k: v for k, v in given.items() if v is not None})
        if isinstance(source, Tape) and self.options.record_mode in (RecordMode.ONCE, RecordMode.ALL):
            raise ConfigurationError(
                f"mode={self.options.record_mode.value!r} records, so it needs a tape path, not a loaded Tape"
            )
        self.source = source

    def _path(self) -> Path | None:
        return None if isinstance(self.source, Tape) else Path(self.source)

    def _start(self) -> tuple[ReplaySession, _Entered]:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        warn_if_replay_active("replay(...)")
        path = self._path()
        options = self.options.with_project(project_settings())  # read at each start: a changed rule applies
        lock = tapes.writer_lock(path, options)
        try:
            return self._begin(path, options, lock)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    def _begin(
        self, path: Path | None, options: ReplayOptions, lock: TapeLock | None
    ) -> tuple[ReplaySession, _Entered]:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        recorder: record | None = None
        temp: Path | None = None
        still = False
        if path is not None and options.records(path.exists()):
            if options.record_mode == RecordMode.ALL:
                temp = path.with_name(f".{path.name}.recording-{os.getpid()}")
            recorder = _recorder(temp or path, options)
            session = ReplaySession(options, None, str(path), recording=True)
        else:
            tape = self.source if isinstance(self.source, Tape) else tapes.load(path, options)
            still = heap.is_large(tape)
            tapes.check_age(tape, options)
            tapes.check_not_empty(tape, options)
            fork_tape = tapes.fork_tape(options, tape)
            if fork_tape is not None:  # the replayed (forked) run is written there, as a tape of its own
                recorder = _recorder(fork_tape, options)
            session = ReplaySession(options, tape, tape.path, recording=False, fork_tape=fork_tape)
            replay_started(session)
        token = current_replay.set(session)
        block = open_block("record" if session.recording else "replay", str(path or session.tape_path or ""))
        if still:
            heap.held_still.enter()
        if not session.recording:
            install_trust_deferral()
        if session.network_guard is not None:
            install_network_guard()
        if session.child_watch is not None:
            agent_commit()  # its ``git rev-parse`` (once per process) is ours, not a process the agent started
            install_child_watch()
        http = (
            activate(
                options.http_routes,
                http_models=options.http_models,
                http_side_effects=options.http_side_effects,
                mcp_side_effects=options.mcp_side_effects,
            )
            if options.http
            else None
        )
        return session, _Entered(session, token, recorder, temp, http, still, lock, block)

    def _stop(self, entered: _Entered, error: BaseException | None) -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        try:
            self._end(entered, error)
        finally:
            if entered.lock is not None:
                entered.lock.release()

    def _end(self, entered: _Entered, error: BaseException | None) -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        replay_ended(entered.session)
        if entered.children is not None:
            close_block(entered.children)  # the children's steps in flight end before the run does
        entered.session.end_implicit(error)  # its span reaches a recording still open (a fork tape)
        if entered.http is not None:
            entered.http.close()
        current_replay.reset(entered.token)
        if not entered.session.recording:
            uninstall_trust_deferral()
        if entered.session.network_guard is not None:
            uninstall_network_guard()
        if entered.session.child_watch is not None:
            uninstall_child_watch()
        if entered.recorder is not None:
            entered.recorder.__exit__(type(error) if error else None, error, None)
            path = self._path() if entered.session.recording else None
            temp = entered.temp
            if temp is not None and path is not None:
                if error is None and temp.exists():
                    os.replace(temp, path)
                else:
                    temp.unlink(missing_ok=True)
        try:
            entered.session.finish(error)
        finally:
            if entered.still:
                heap.held_still.exit()


def _recorder(path: Path, options: ReplayOptions) -> record:
    """A recording of ``path`` under the replay's rules, entered. The recorder (and the OpenTelemetry SDK it
    brings) is imported here, at the first replay that records: a strict replay never pays for it."""
    from otel_agent_replay.recorder import record

    recorder = record(
        path,
        redactor=options.redactor,
        key_ignore=options.key_ignore,
        http=False,
        lock_timeout=options.lock_timeout,
    )
    recorder.__enter__()
    return recorder
