"""The state of one replay: which recorded run each live run replays, the decision for each
call (hit, drift, miss, refused, stub, fake, override, live), counters and divergences.

``replay(...)`` (in ``replay.py``) configures and installs a session; instrumentation asks
it for every decorated call while it is active.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import INVALID_SPAN, Link, SpanContext, TraceFlags

from otel_agent_replay.capture import Capture, CapturedResult, capture_args
from otel_agent_replay.comparison import RunView
from otel_agent_replay.core import (
    ConfigurationError,
    DivergenceKind,
    ModelPolicy,
    RecordMode,
    ReplayDivergence,
    ReplayError,
    SideEffect,
    SideEffectName,
    SideEffectPolicy,
    StalePolicy,
    StepKind,
    TapeStale,
    TapeWarning,
)
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import (
    Prepared,
    RunState,
    StepInFlight,
    ToolSpec,
    active_run,
    call_recorded,
    call_recorded_async,
    current_run,
    make_spec,
    prepare,
    start_step,
    tool_spec,
)
from otel_agent_replay.tape import Run, Step, Tape

from ._append import AppendedStep, Appender
from ._index import RunIndex, rebuild_exception, recorded_result
from ._ledger import Divergence, Ledger, ReplayStats
from ._messages import drift_error, miss_error, refused_error, unused_error
from ._options import ReplayOptions

_READ_ONLY = SideEffect.READ_ONLY


class _ReplayRun:
    """A live run bound to the recorded run it replays (or to none: every call misses)."""

    def __init__(self, index: RunIndex | None, state: RunState | None) -> None:
        self.index = index
        self.state = state
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def recorded_id(self) -> str:
        return self.index.run.run_id if self.index is not None else ""

    def position(self, tool: str) -> int:
        with self._lock:
            n = self._counts.get(tool, 0) + 1
            self._counts[tool] = n
            return n


@dataclass(frozen=True, slots=True)
class _Decision:
    how: str
    """``tape`` (serve a recorded step), ``fallback`` (the user's fake) or ``live`` (run it)."""
    step: Step | None = None
    override: Any = None
    has_override: bool = False
    fake: Callable[..., Any] | None = None
    append: bool = False


_NO_OVERRIDE = object()
_RECORDING_RUN = object()


class ReplaySession:
    """The state of one replay: runs to replay, counters, divergences. Also the handle."""

    def __init__(self, options: ReplayOptions, tape: Tape | None, tape_path: str | None, recording: bool) -> None:
        self.options = options
        self.tape = tape
        self.tape_path = tape_path
        self.recording = recording
        self.mode = options.record_mode
        self.spans = options.spans
        self._models_live = options.model_policy == ModelPolicy.LIVE
        self._stub_all = options.side_effect_policy == SideEffectPolicy.STUB
        self._new_episodes = self.mode == RecordMode.NEW_EPISODES
        self.capture = Capture(redactor=options.redactor)
        self.ledger = Ledger()
        self._lock = threading.Lock()
        self._queue: list[Run] = list(select_runs(tape, options)) if tape is not None else []
        self._bound: list[_ReplayRun] = []
        self._implicit: _ReplayRun | None = None
        self._appender: Appender | None = None
        self.closed = False

    # --- the handle ------------------------------------------------------------------

    @property
    def stats(self) -> ReplayStats:
        """Counters of this replay (a snapshot), with its ``mode``; also readable as a mapping."""
        return self.ledger.stats("record" if self.recording else self.mode.value)

    @property
    def report(self) -> tuple[Divergence, ...]:
        """Every divergence so far, in the order it happened."""
        return self.ledger.report()

    def view(self) -> RunView:
        """The replayed behaviour so far, for assertions (``tools_called``, ``called_with`` …)."""
        return self.ledger.view(f"replay of {self.tape_path}")

    def double(
        self, fn: Callable[..., Any], *, name: str | None = None, side_effect: SideEffect | SideEffectName | None = None
    ) -> Callable[..., Any]:
        """A double of ``fn`` with its signature, served by this replay.

        For tools a framework holds in its own registry. ``fn`` may be decorated with
        ``@tool`` (its declaration is used) or plain (declare ``side_effect`` here;
        undeclared is treated as not read-only).
        """
        spec = tool_spec(fn)
        original = getattr(fn, "__wrapped__", fn) if spec is not None else fn
        if spec is None or name is not None or side_effect is not None:
            spec = make_spec(
                original,
                name=name or (spec.name if spec else None),
                kind=StepKind.TOOL,
                side_effect=side_effect or (spec.side_effect if spec else None),
                version=spec.version if spec else None,
                ttl=None,
                ignore=spec.ignore if spec else (),
            )
        final = spec
        if final.is_async:

            @functools.wraps(original)
            async def async_double(*args: Any, **kwargs: Any) -> Any:
                return await self.call_async(final, original, args, kwargs)

            return async_double

        @functools.wraps(original)
        def sync_double(*args: Any, **kwargs: Any) -> Any:
            return self.call(final, original, args, kwargs)

        return sync_double

    def doubles(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]]) -> Any:
        """Doubles for a registry: a mapping of name → function, or a list of functions."""
        if isinstance(tools, Mapping):
            return {key: self.double(fn, name=key if tool_spec(fn) is None else None) for key, fn in tools.items()}
        return [self.double(fn) for fn in tools]

    # --- runs ------------------------------------------------------------------------

    def begin_run(self, agent_name: str, run_id: str) -> tuple[dict[str, Any], list[Link], object]:
        if self.recording:
            return {}, [], _RECORDING_RUN  # nothing to bind; end_run still learns the output
        with self._lock:
            recorded = self._queue.pop(0) if self._queue else None
        self.ledger.bump("runs_replayed")
        index = (
            RunIndex(recorded, include_models=self.options.model_policy == ModelPolicy.TAPE)
            if recorded is not None
            else None
        )
        bound = _ReplayRun(index, None)
        with self._lock:
            self._bound.append(bound)
        if recorded is None:
            self.ledger.diverge(
                DivergenceKind.RUN_COUNT,
                "",
                agent_name,
                0,
                None,
                f"the agent started run {run_id} ({agent_name}) but the tape has no more runs to replay",
            )
            return {A.MODE: A.MODE_REPLAY}, [], bound
        attrs: dict[str, Any] = {A.MODE: A.MODE_REPLAY, A.REPLAY_OF: recorded.run_id}
        return attrs, _links(recorded.trace_id, recorded.span_id), bound

    def end_run(self, output: object) -> None:
        """Learn a run's output (``view()`` shows the last one)."""
        self.ledger.add_output(output)

    def _index(self, run: Run) -> RunIndex:
        return RunIndex(run, include_models=self.options.model_policy == ModelPolicy.TAPE)

    def _binding(self) -> tuple[_ReplayRun, RunState]:
        state = current_run.get() or active_run()
        if state is not None and isinstance(state.replay, _ReplayRun):
            return state.replay, state
        with self._lock:
            implicit = self._implicit
            if implicit is None:
                recorded = self._queue.pop(0) if self._queue else None
                index = (
                    RunIndex(recorded, include_models=self.options.model_policy == ModelPolicy.TAPE)
                    if recorded
                    else None
                )
                live = RunState(
                    recorded.run_id if recorded else "",
                    recorded.agent_name if recorded else "",
                    INVALID_SPAN,
                    self.capture,
                    None,
                )
                implicit = self._implicit = _ReplayRun(index, live)
                self._bound.append(implicit)
        assert implicit.state is not None
        return implicit, implicit.state

    # --- calls -----------------------------------------------------------------------

    def call(self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Serve one call of a decorated function (or a double)."""
        serving = self._begin_serving(spec, args, kwargs)
        try:
            result = serving.invoke(fn, args, kwargs)
        except BaseException as exc:
            serving.fail(exc)
            raise
        serving.done(result)
        return result

    async def call_async(
        self, spec: ToolSpec, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """``call`` for coroutine functions: the same serving, with the live call (or an async fake) awaited."""
        serving = self._begin_serving(spec, args, kwargs)
        try:
            result = serving.invoke(fn, args, kwargs)
            if inspect.isawaitable(result):
                result = await result
        except BaseException as exc:
            serving.fail(exc)
            raise
        serving.done(result)
        return result

    def _begin_serving(self, spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Serving | _Recorded:
        if self.recording:
            return _Recorded(self, spec, self._count_recorded(spec), args, kwargs)
        bound, _state, prep, decision = self._prepare_call(spec, args, kwargs)
        step = start_step(spec, prep, _step_links(decision.step)) if self.spans else None
        pending = None
        if decision.how == "live":
            self.ledger.bump("live_model_calls" if spec.is_llm else "live_tool_calls")
            appender = self._appender_for(decision, bound)
            if appender is not None:
                pending = appender.start(spec, prep, bound.index.run if bound.index else None)
        return _Serving(self, spec, prep, decision, step, pending)

    def _observe(self, spec: ToolSpec, prep: Prepared, result: object, error: BaseException | None) -> None:
        self.ledger.remember(spec, prep.ids.seq, prep.captured.value, result, error)

    def _observe_recorded(
        self,
        spec: ToolSpec,
        seq: int,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: object,
        error: BaseException | None,
    ) -> None:
        try:
            bound = spec.binder(args, kwargs)
        except TypeError:
            bound = {}
        self.ledger.remember(spec, seq, capture_args(spec.name, bound, self.capture).value, result, error)

    def _prepare_call(
        self, spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[_ReplayRun, RunState, Prepared, _Decision]:
        if self.closed:
            raise ReplayError(f"this replay of {self.tape_path} has ended; call doubles inside its block")
        bound, state = self._binding()
        prep = prepare(spec, state, args, kwargs)
        try:
            decision = self._decide(spec, bound, prep)
        except ReplayDivergence as exc:
            if self.spans:
                start_step(spec, prep).fail(exc)
            raise
        return bound, state, prep, decision

    def _count_recorded(self, spec: ToolSpec) -> int:
        return self.ledger.count_recorded(spec, self._read_only(spec))

    def _read_only(self, spec: ToolSpec) -> bool:
        declared = spec.side_effect or self.options.declared.get(spec.name)
        return declared == _READ_ONLY

    def _decide(self, spec: ToolSpec, bound: _ReplayRun, prep: Prepared) -> _Decision:
        name = spec.name
        n = bound.position(name)
        seq = prep.ids.seq
        run_id = bound.recorded_id
        if spec.is_llm and self._models_live:
            self.ledger.bump("steps")
            return _Decision("live")
        read_only = spec.is_llm or self._read_only(spec)
        if not read_only and name not in self.options.stubbed and not self._stub_all:
            self.ledger.bump("steps", "refused_side_effects")
            declared = spec.side_effect or self.options.declared.get(name)
            self.ledger.fail(refused_error(name, declared, run_id), run_id, name, n, seq)
        index = bound.index
        step = index.take(prep.captured.call_key) if index is not None else None
        if step is not None:
            if step.expires_at or (spec.version is not None and step.tool_version is not None):
                self._check_fresh(spec, step, run_id, n)
            override = self._override(name, n)
            if override is not _NO_OVERRIDE:
                stub = () if read_only else ("stubbed_side_effects",)
                self.ledger.bump("steps", "tape_hits", "overrides_applied", *stub)
                return _Decision("tape", step=step, override=override, has_override=True)
            if read_only:
                self.ledger.bump("steps", "tape_hits")
            else:
                self.ledger.bump("steps", "tape_hits", "stubbed_side_effects")
            return _Decision("tape", step=step)
        drifted = index.at_position(name, n) if index is not None else None
        if drifted is not None:
            self.ledger.bump("steps", "drift_events")
            self.ledger.fail(drift_error(bound, drifted, spec, prep, n, self.mode), run_id, name, n, seq)
        fake = self.options.fallbacks.get(name)
        if fake is not None:
            self.ledger.bump("steps", "tape_misses", "fallback_calls")
            return _Decision("fallback", fake=fake)
        self.ledger.bump("steps", "tape_misses")
        if self._new_episodes and read_only and not spec.is_llm:
            return _Decision("live", append=True)
        self.ledger.fail(miss_error(bound, spec, prep, n, self.mode, self.tape_path), run_id, name, n, seq)

    def _override(self, name: str, n: int) -> Any:
        overrides = self.options.overrides
        if not overrides:
            return _NO_OVERRIDE
        if (name, n) in overrides:
            return overrides[(name, n)]
        return overrides.get(name, _NO_OVERRIDE)

    def _check_fresh(self, spec: ToolSpec, step: Step, run_id: str, n: int) -> None:
        if step.expires_at:
            try:
                expires = _dt.datetime.fromisoformat(step.expires_at)
            except ValueError:
                expires = None
            if expires is not None and expires < _dt.datetime.now(_dt.timezone.utc):
                message = (
                    f"{step.tool} (recorded seq {step.seq}) expired at {step.expires_at}; its answer may be out "
                    f"of date: re-record the tape (mode='all')"
                )
                self.ledger.bump("stale_steps")
                self.ledger.diverge(DivergenceKind.EXPIRED, run_id, step.tool, n, step.seq, message)
                warnings.warn(message, TapeWarning, stacklevel=4)
        if spec.version is not None and step.tool_version is not None and spec.version != step.tool_version:
            message = (
                f"{step.tool} is version {spec.version!r} now but was recorded at version {step.tool_version!r} "
                f"(recorded seq {step.seq}); re-record the tape (mode='all') to refresh it"
            )
            self.ledger.bump("stale_steps")
            if self.options.stale_policy == StalePolicy.ERROR:
                self.ledger.fail(TapeStale(message), run_id, step.tool, n, step.seq)
            self.ledger.diverge(DivergenceKind.STALE, run_id, step.tool, n, step.seq, message)
            warnings.warn(message, TapeWarning, stacklevel=4)

    def _from_tape(self, decision: _Decision) -> Any:
        if decision.has_override:
            value = decision.override
            if isinstance(value, BaseException):
                raise value
            if isinstance(value, type) and issubclass(value, BaseException):
                raise value()
            return value
        step = decision.step
        assert step is not None
        if step.error is not None:
            raise rebuild_exception(step.error)
        return recorded_result(step, self.tape_path)

    def _appender_for(self, decision: _Decision, bound: _ReplayRun) -> Appender | None:
        if not decision.append or self.tape_path is None or bound.index is None:
            return None
        with self._lock:
            if self._appender is None:
                self._appender = Appender(self.tape_path, self.capture)
            return self._appender

    # --- the end ---------------------------------------------------------------------

    def finish(self, propagating: BaseException | None) -> None:
        """Close the replay: count unused steps, then fail a strict replay that diverged."""
        self.closed = True
        if self._appender is not None:
            self._appender.close()
        if self.recording:
            return
        unused: list[tuple[str, Step]] = []
        with self._lock:
            leftover = list(self._queue)
            bound = list(self._bound)
        for replay_run in bound:
            if replay_run.index is not None:
                unused.extend((replay_run.recorded_id, s) for s in replay_run.index.unused())
        for run in leftover:
            self.ledger.diverge(
                DivergenceKind.RUN_COUNT,
                run.run_id,
                run.agent_name,
                0,
                None,
                f"recorded run {run.run_id} ({run.agent_name}) was never replayed: the agent started fewer runs",
            )
            index = self._index(run)
            unused.extend((run.run_id, s) for s in index.steps)
        for run_id, step in unused:
            message = f"{step.tool} (seq {step.seq}) was never called"
            self.ledger.diverge(DivergenceKind.UNUSED, run_id, step.tool, 0, step.seq, message)
        self.ledger.set_count("unused_entries", len(unused))
        if propagating is not None:
            wrapped = _wrapped_divergence(propagating, self.ledger.raised)
            if wrapped is not None:
                raise wrapped from propagating  # a library turned it into its own error (an SDK's retry)
            return
        if self.ledger.raised:
            raise self.ledger.raised[0]  # swallowed by the agent: the test must still fail
        if unused and not self.options.allow_unused:
            raise unused_error(unused, self.tape_path)


class _Serving:
    """One replayed call in flight: its replay span and appended step, if any, and how it ends."""

    __slots__ = ("decision", "pending", "prep", "session", "spec", "step")

    def __init__(
        self,
        session: ReplaySession,
        spec: ToolSpec,
        prep: Prepared,
        decision: _Decision,
        step: StepInFlight | None,
        pending: AppendedStep | None,
    ) -> None:
        self.session = session
        self.spec = spec
        self.prep = prep
        self.decision = decision
        self.step = step
        self.pending = pending

    def invoke(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The recorded result (or exception), or what the fake or the live function returns."""
        if self.decision.how == "tape":
            return self.session._from_tape(self.decision)
        return (self.decision.fake or fn)(*args, **kwargs)

    def fail(self, exc: BaseException) -> None:
        self.session._observe(self.spec, self.prep, None, exc)
        if self.pending is not None:
            self.pending.fail(exc)
        if self.step is not None:
            self.step.fail(exc)

    def done(self, result: object) -> None:
        self.session._observe(self.spec, self.prep, result, None)
        if self.pending is not None:
            self.pending.finish(result)
        if self.step is not None:
            self.step.finish(result, _as_recorded(self.decision))


class _Recorded:
    """One call while the replay records (modes ``once`` on a missing tape and ``all``): it runs live."""

    __slots__ = ("args", "kwargs", "seq", "session", "spec")

    def __init__(
        self, session: ReplaySession, spec: ToolSpec, seq: int, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.session = session
        self.spec = spec
        self.seq = seq
        self.args = args
        self.kwargs = kwargs

    def invoke(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the real function as a recorded step (a coroutine to await for async functions)."""
        run = call_recorded_async if self.spec.is_async else call_recorded
        return run(self.spec, fn, args, kwargs)

    def fail(self, exc: BaseException) -> None:
        self.session._observe_recorded(self.spec, self.seq, self.args, self.kwargs, None, exc)

    def done(self, result: object) -> None:
        self.session._observe_recorded(self.spec, self.seq, self.args, self.kwargs, result, None)


def _as_recorded(decision: _Decision) -> CapturedResult | None:
    """The recorded result's JSON when it was served as recorded: no need to capture it again."""
    step = decision.step
    if decision.how != "tape" or decision.has_override or step is None or step.result_json is None:
        return None
    return CapturedResult(step.result_json, step.result_sha256, step.result_truncated)


def _wrapped_divergence(error: BaseException, raised: list[ReplayDivergence]) -> BaseException | None:
    """A divergence this replay raised that ``error`` carries as its cause or context, if any."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if cause is not error and any(cause is r for r in raised):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


def _links(trace_id: str, span_id: str) -> list[Link]:
    if not trace_id or not span_id or set(span_id) == {"0"}:
        return []
    try:
        ctx = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
    except ValueError:
        return []
    return [Link(ctx)]


def _step_links(step: Step | None) -> list[Link]:
    return _links(step.trace_id, step.span_id) if step is not None else []


def select_runs(tape: Tape, options: ReplayOptions) -> tuple[Run, ...]:
    runs = tape.runs
    if options.run_id is not None:
        return (tape.run(options.run_id),)
    if options.trace_id is not None:
        selected = tape.runs_of_trace(options.trace_id)
        if not selected:
            raise ConfigurationError(f"{tape.path}: no run of trace {options.trace_id!r} on this tape")
        return selected
    return runs
