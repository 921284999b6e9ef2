"""The state of one replay: each call prepared, decided (``_decide``) and served (``_serving``), the
counters and divergences, and the end; which recorded run each live run replays is ``_binding``'s.

``replay(...)`` (in ``_replay``) configures and installs a session; instrumentation asks it for
every decorated call while it is active.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from opentelemetry.trace import Link, Span

from otel_agent_replay.capture import (
    Capture,
    CapturedArgs,
    KeyRules,
    RecordedArgs,
    StandInTable,
    capture_args,
    key_from_json,
)
from otel_agent_replay.comparison import RunView
from otel_agent_replay.core import (
    DivergenceKind,
    NetworkBlocked,
    OutsidePolicy,
    Pace,
    ReplayDivergence,
    ReplayError,
    SideEffect,
    SideEffectName,
)
from otel_agent_replay.core.attributes import CALL_KEY
from otel_agent_replay.instrumentation import (
    Prepared,
    RunState,
    ToolSpec,
    end_implicit_run,
    prepare,
    start_step,
    tool_spec,
)
from otel_agent_replay.seal import ChildWatch, NetworkGuard, running_live
from otel_agent_replay.tape import Tape
from otel_agent_replay.timetravel import Fork, ForkState

from ._append import Appender
from ._binding import RunBinder
from ._decide import Decider
from ._doubles import make_double
from ._ending import count_unused, settle
from ._index import rebuild_exception, recorded_result
from ._ledger import Divergence, Ledger, ReplayStats
from ._messages import outside_error
from ._options import ReplayOptions
from ._runs import ReplayRun
from ._serving import (
    Decision,
    HitSpan,
    Recorded,
    Serving,
    replay_tracer,
    serves_as_recorded,
    step_links,
)
from ._streaming import serve_stream, serve_stream_async

_READ_ONLY = SideEffect.READ_ONLY


_RECORDING_RUN = object()


class ReplaySession:
    """The state of one replay: runs to replay, counters, divergences. Also the handle."""

    def __init__(
        self,
        options: ReplayOptions,
        tape: Tape | None,
        tape_path: str | None,
        recording: bool,
        fork_tape: Path | None = None,
    ) -> None:
        self.options = options
        self.tape = tape
        self.tape_path = tape_path
        self.recording = recording
        self.mode = options.record_mode
        self.spans = options.spans
        self._pace = options.pace_policy == Pace.RECORDED
        # a recorded stand-in echoed by the agent into a later call is keyed on the marker it stands for
        known = StandInTable.from_attributes(tape.stand_in_values()) if tape is not None else None
        # a live call whose canonical arguments are a recorded call's is keyed without the detector (``_recorded``)
        recorded = RecordedArgs(partial(_recorded_texts, tape)) if tape is not None and not recording else None
        self.capture = Capture(
            redactor=options.redactor, keys=KeyRules(options.key_ignore), known=known, recorded=recorded
        )
        self._key_rules = bool(self.capture.keys)
        self._tracer = replay_tracer()
        self.ledger = Ledger()
        self.fork_state = ForkState(options.then_policy, fork_tape, tape_path)
        self._decider = Decider(options, self.ledger, tape, tape_path, self.fork_state)
        self._lock = threading.Lock()
        self._runs = RunBinder(weakref.ref(self), options, tape, self.ledger, self.capture)
        self._appender: Appender | None = None
        self.closed = False
        self.on_run_end: Callable[[Span, object], None] | None = None
        """Called with the run span (still open: attributes and events may go on it) and the output
        as each replayed run ends; the regression run evaluates there."""

        # What the guard and the watch call back names the ledger and the path, not the session: the
        # session is then in no reference cycle and is freed (with its index and its report) as soon as
        # it is dropped, not by a full collection of the garbage collector in a later replay.
        ledger = self.ledger

        def describe() -> str:
            return str(tape_path)

        self.network_guard: NetworkGuard | None = (
            NetworkGuard(
                options.allow_hosts,
                describe,
                partial(_blocked, ledger),
                options.passthrough_hosts,
                partial(ledger.bump, "loopback_connections"),
                options.allow_sockets,
            )
            if options.guards_network and not recording
            else None
        )
        """The network guard of a strict replay (see ``_network``), or None."""
        self.child_watch: ChildWatch | None = (
            None if recording else ChildWatch(describe, partial(ledger.bump, "child_processes"))
        )
        """Counts the processes started from this replay's context (see ``_children``); None while recording."""

    # --- the handle ------------------------------------------------------------------

    @property
    def stats(self) -> ReplayStats:
        """Counters of this replay (a snapshot), with its ``mode``; also readable as a mapping."""
        return self.ledger.stats("record" if self.recording else self.mode.value)

    @property
    def report(self) -> tuple[Divergence, ...]:
        """Every divergence so far, in the order it happened."""
        return self.ledger.report()

    @property
    def fork(self) -> Fork | None:
        """Where the replay forked (``then="live"``/``"fallbacks"``, ``edit=``): the recorded step, the cause and
        the difference, and the tape the forked run went to; None while it has not forked."""
        return self.fork_state.fork

    @property
    def pace(self) -> bool:
        """Whether streams are paced at their recorded offsets (``pace="recorded"``)."""
        return self._pace

    @property
    def out_of_bounds(self) -> tuple[str, ...]:
        """The tools whose calls were answered out of bounds (``on_miss="error_result"``), in order."""
        return tuple(d.tool for d in self.ledger.report() if d.kind == DivergenceKind.OUT_OF_BOUNDS)

    def passes_through(self, host: str, port: int | None) -> bool:
        """Whether an HTTP request to this host goes live under ``passthrough=`` (counted when it does)."""
        if not self.options.passes_through(host, port):
            return False
        self.ledger.bump("passthrough_requests")
        return True

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
        return make_double(self, fn, name, side_effect)

    def doubles(self, tools: Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]]) -> Any:
        """Doubles for a registry: a mapping of name → function, or a list of functions."""
        if isinstance(tools, Mapping):
            return {key: self.double(fn, name=key if tool_spec(fn) is None else None) for key, fn in tools.items()}
        return [self.double(fn) for fn in tools]

    # --- runs ------------------------------------------------------------------------

    def begin_run(
        self, agent_name: str, run_id: str, input_hash: str | None = None
    ) -> tuple[dict[str, Any], list[Link], object]:
        """Bind a live run to the next recorded run of the same agent (the same input first), in recorded order.

        A live run whose agent has no run on the tape fails with ``UnknownAgent`` naming the agents
        it has; one more run of an agent than recorded is a ``run_count`` divergence (its calls miss).
        """
        if self.recording:
            return {}, [], _RECORDING_RUN  # nothing to bind; end_run still learns the output
        return self._runs.begin_run(agent_name, run_id, input_hash, self.tape_path)

    def end_run(self, output: object, span: Span) -> None:
        """Learn a run's output (``view()`` shows the last one); then ``on_run_end``, if set."""
        self.ledger.add_output(output)
        if self.on_run_end is not None:
            self.on_run_end(span, output)

    def end_implicit(self, error: BaseException | None = None) -> None:
        """End the replay's implicit run, if it opened one (as the replay block ends)."""
        end_implicit_run(self, error)

    # --- calls -----------------------------------------------------------------------

    def outside_call(self, spec: ToolSpec) -> BaseException | None:
        """A decorated call made from a context that carries no replay while this one is active.

        It cannot be served from the tape (it belongs to no bound run), so it is refused, or runs
        live when it is read-only and ``outside_calls='read_only'``. Counted either way; a refusal is
        in the report and fails the replay at its end even when the thread swallowed it.
        """
        read_only = spec.is_llm or self._decider.read_only(spec)
        if read_only and self.options.outside_policy == OutsidePolicy.READ_ONLY:
            self.ledger.bump("outside_calls", "live_model_calls" if spec.is_llm else "live_tool_calls")
            return None
        self.ledger.bump("outside_calls", "refused_side_effects")
        error = outside_error(spec.name, read_only, self.tape_path)
        self.ledger.failed(error, "", spec.name, 0, None)
        return error

    def call(self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Serve one call of a decorated function (or a double)."""
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        serving = self._begin_serving(spec, args, kwargs)
        live = running_live.set(True) if type(serving) is Serving and serving.decision.how == "live" else None
        try:
            result = serving.invoke(fn, args, kwargs)
        except BaseException as exc:
            serving.fail(exc)
            raise
        finally:
            if live is not None:
                running_live.reset(live)
        serving.done(result)
        return result

    async def call_async(
        self, spec: ToolSpec, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """``call`` for coroutine functions: the same serving, with the live call (or an async fake) awaited."""
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        serving = self._begin_serving(spec, args, kwargs)
        live = running_live.set(True) if _runs_live(serving) else None
        try:
            if isinstance(serving, Serving) and serving.decision.how == "tape" and _in_asyncio():
                # A double answers at once; yield to the loop first, as the live call would, so calls
                # the agent runs concurrently (asyncio.gather) also overlap in the replay and are
                # never taken for an order divergence.
                await asyncio.sleep(0)
            result = serving.invoke(fn, args, kwargs)
            if inspect.isawaitable(result):
                result = await result
        except BaseException as exc:
            serving.fail(exc)
            raise
        finally:
            if live is not None:
                running_live.reset(live)
        serving.done(result)
        return result

    def stream(
        self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Iterator[Any]:
        """Serve one call of a generator function (see ``_streaming.serve_stream``)."""
        return serve_stream(self, spec, fn, args, kwargs)

    def stream_async(
        self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]:
        """``stream`` for async-generator functions."""
        return serve_stream_async(self, spec, fn, args, kwargs)

    def _begin_serving(self, spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Serving | Recorded:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        if self.recording:
            return Recorded(self, spec, self._count_recorded(spec), args, kwargs)
        bound, _state, prep, decision = self._prepare_call(spec, args, kwargs)
        if self.spans and serves_as_recorded(spec, decision):
            assert decision.step is not None
            hit = HitSpan(self._tracer, spec, prep, decision.step, step_links(decision.step))
            return Serving(self, spec, prep, decision, None, None, bound, hit)
        step = start_step(spec, prep, step_links(decision.step)) if self.spans else None
        pending = None
        if decision.how == "live":
            self.ledger.bump("live_model_calls" if spec.is_llm else "live_tool_calls")
            appender = self._appender_for(decision, bound)
            if appender is not None:
                pending = appender.start(spec, prep, bound.index.run if bound.index else None)
        return Serving(self, spec, prep, decision, step, pending, bound)

    def _observe(self, spec: ToolSpec, prep: Prepared, result: object, error: BaseException | None) -> None:
        self.ledger.remember(spec, prep.ids.seq, prep.captured.value, result, error)

    def observe_recorded(self, spec: ToolSpec, seq: int, args: dict[str, Any], result: object, error: object) -> None:
        """A step recorded outside ``call`` while this replay records (an HTTP request): kept for ``view()``."""
        if self.recording:
            self.ledger.remember(spec, seq, args, result, error if isinstance(error, BaseException) else None)

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
    ) -> tuple[ReplayRun, RunState, Prepared, Decision]:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        if self.closed:
            raise ReplayError(f"this replay of {self.tape_path} has ended; call doubles inside its block")
        bound, state = self._runs.binding()
        prep = prepare(spec, state, args, kwargs)
        keys = self.capture.keys
        patterns = keys.for_tool(spec.name, spec.key_ignore) if spec.key_ignore or self._key_rules else ()
        if patterns != prep.captured.key_ignore:  # the rules in force here, not the live run's recording's
            captured = prep.captured
            key = self.capture.keys.key(spec.name, captured.value, patterns) if patterns else None
            key = key or key_from_json(spec.name, captured.json)
            prep = dataclasses.replace(prep, captured=CapturedArgs(captured.json, key, captured.value, patterns))
        index = bound.index
        if index is not None and index.keyed_otherwise(spec.name, patterns):
            index.rekey(spec.name, patterns, keys)
        try:
            decision = self._decider.decide(spec, bound, prep)
        except ReplayDivergence as exc:
            if self.spans:
                start_step(spec, prep).fail(exc)
            raise
        return bound, state, prep, decision

    def _count_recorded(self, spec: ToolSpec) -> int:
        return self.ledger.count_recorded(spec, self._decider.read_only(spec))

    def _from_tape(self, decision: Decision, spec: ToolSpec) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
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
            raise rebuild_exception(step.error, step.attributes)
        return recorded_result(step, self.tape_path, spec.result_hint())

    def _appender_for(self, decision: Decision, bound: ReplayRun) -> Appender | None:
        if not decision.append or self.tape_path is None or bound.index is None:
            return None
        with self._lock:
            if self._appender is None:
                self._appender = Appender(self.tape_path, self.capture)
            return self._appender

    # --- the end ---------------------------------------------------------------------

    def finish(self, propagating: BaseException | None) -> None:
        """Close the replay: count unused steps, then fail a strict replay that diverged."""
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        self.closed = True
        if self._appender is not None:
            self._appender.close()
        if self.recording:
            return
        unused = count_unused(self._runs, self.ledger)
        # a fork or an edit changes the path on purpose: what was not used is in the report, not a failure
        settle(
            self.ledger,
            propagating,
            unused,
            strict=not (self.options.allow_unused or self.fork_state.forked or self.options.edit),
            tape_path=self.tape_path,
            hints=self.options.hints,
        )


def _recorded_texts(tape: Tape) -> frozenset[str]:
    """The argument texts of the tape's own steps: those with a recorded call key, whose arguments passed our
    redaction (a step another tool wrote has none, and its arguments may not have). Made once per loaded tape
    (``Tape.derived``): every step is read, so a session on a large tape would otherwise pay a scan of it on
    its first call, and the same tape is replayed by session after session (a suite, repetitions)."""
    texts = tape.derived.get(_RECORDED_TEXTS)
    if texts is None:
        texts = frozenset(step.args_json for run in tape.runs for step in run.steps if step.attributes.get(CALL_KEY))
        tape.derived[_RECORDED_TEXTS] = texts
    return texts


_RECORDED_TEXTS = "recorded_args"


def _blocked(ledger: Ledger, error: NetworkBlocked) -> None:
    """A connection the network guard refused: counted, and the replay fails at its end."""
    ledger.bump("blocked_connections")
    where = f"{error.host}:{error.port}" if error.port is not None else error.host
    ledger.fail(error, "", where, 0, None)


def _runs_live(serving: Serving | Recorded) -> bool:
    """Whether the replay runs this call live on purpose (its traffic is expected, not loopback let through)."""
    return isinstance(serving, Serving) and serving.decision.how == "live"


def _in_asyncio() -> bool:
    """Whether an asyncio loop runs this coroutine (not trio, say, whose loop asyncio.sleep cannot use)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
