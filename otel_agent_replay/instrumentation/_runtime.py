"""Per-run state and the context variables that carry it.

The active run and the active recording travel in ``contextvars``, never in
thread-locals: frameworks run sync tools in worker threads that receive a copy of the
context, and run one turn's tool calls concurrently. A thread started without a copy
of the context falls back to the only run active in the process, if there is exactly one.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from otel_agent_replay.capture import Capture

if TYPE_CHECKING:
    from opentelemetry.trace import Link, Span


@dataclass(frozen=True, slots=True)
class StepIds:
    """Identity of a step, taken when it starts."""

    seq: int
    step_id: str
    parent_step_id: str


class RunState:
    """The mutable state of one active run: counters behind a lock, not a clock."""

    __slots__ = (
        "_counts",
        "_lock",
        "_open",
        "_seq",
        "_targets",
        "agent_name",
        "capture",
        "last_model_step_id",
        "recording",
        "replay",
        "run_id",
        "span",
    )

    def __init__(self, run_id: str, agent_name: str, span: Span, capture: Capture, recording: object) -> None:
        self.run_id = run_id
        self.agent_name = agent_name
        self.span = span
        self.capture = capture
        self.recording = recording
        self.last_model_step_id = ""
        self.replay: object | None = None
        """The replay run this run is matched to, during a replay."""
        self._seq = 0
        self._counts: dict[tuple[str, str], int] = {}
        self._targets: dict[int, tuple[object, str]] = {}
        self._open: dict[int, tuple[str, Callable[[], None]]] = {}
        self._lock = threading.Lock()

    def next_step(self, name: str, enclosing_step_id: str | None, *, model: bool = False) -> StepIds:
        """Take the next seq and derive step_id and parent_step_id.

        step_id is ``name#n`` (the nth call of that tool or model function in its scope),
        prefixed by the enclosing step's id when steps nest: a step inserted elsewhere
        does not shift it. parent_step_id is the enclosing step; otherwise, for a tool
        step, the most recent finished model step of the run (the decision that asked for
        it). A ``model`` step has no parent but its enclosing step: model steps are
        siblings under the run, so a ReAct loop reads turn after turn, never a staircase.
        """
        scope = enclosing_step_id or ""
        with self._lock:
            self._seq += 1
            n = self._counts.get((scope, name), 0) + 1
            self._counts[(scope, name)] = n
            seq = self._seq
            parent = enclosing_step_id or ("" if model else self.last_model_step_id)
        step_id = f"{scope}/{name}#{n}" if scope else f"{name}#{n}"
        return StepIds(seq=seq, step_id=step_id, parent_step_id=parent)

    def target_of(self, receiver: object) -> str:
        """A run-local name for the object a method step is called on: ``Client#2`` is the second
        ``Client`` the run's steps were called on. Two objects' calls with the same arguments are
        then two calls, not a retry. The run holds the objects until it ends, so an id is never reused."""
        with self._lock:
            known = self._targets.get(id(receiver))
            if known is not None and known[0] is receiver:
                return known[1]
            kind = type(receiver).__qualname__
            n = 1 + sum(1 for obj, _ in self._targets.values() if type(obj) is type(receiver))
            name = f"{kind}#{n}"
            self._targets[id(receiver)] = (receiver, name)
            return name

    def model_step_done(self, step_id: str) -> None:
        with self._lock:
            self.last_model_step_id = step_id

    @property
    def steps_started(self) -> int:
        return self._seq

    def stream_opened(self, name: str, end: Callable[[], None]) -> int:
        """Note a streamed step that has started; ``end`` ends it as recorded so far. Returns its token."""
        token = id(end)
        with self._lock:
            self._open[token] = (name, end)
        return token

    def stream_closed(self, token: int) -> bool:
        """The stream has ended (or is being ended): True for the one caller that ends it."""
        with self._lock:
            return self._open.pop(token, None) is not None

    def end_open_streams(self) -> tuple[list[str], list[tuple[str, str]]]:
        """End the streams still open as the run ends (their consumers never closed them), as recorded so
        far, so that their steps reach the tape. Returns the names of those ended, and (name, why) of those
        whose end raised: their steps are lost (the run's own end goes on). Never raises."""
        with self._lock:
            still_open = list(self._open.values())
        ended: list[str] = []
        lost: list[tuple[str, str]] = []
        for name, end in still_open:
            try:
                end()
            except Exception as exc:  # the step is lost rather than the run's own end; the caller says so
                lost.append((name, f"{type(exc).__name__}: {exc}"))
                continue
            ended.append(name)
        return ended, lost


current_run: ContextVar[RunState | None] = ContextVar("agent_replay_run", default=None)
current_step: ContextVar[str | None] = ContextVar("agent_replay_step", default=None)
current_recording: ContextVar[object | None] = ContextVar("agent_replay_recording", default=None)

_active_runs: set[RunState] = set()
_active_lock = threading.Lock()


def run_started(run: RunState) -> None:
    with _active_lock:
        _active_runs.add(run)


def run_ended(run: RunState) -> None:
    with _active_lock:
        _active_runs.discard(run)


implicit_hooks: list[Callable[[object], RunState]] = []
"""How a recording's implicit run is opened (``_implicit.implicit_run`` adds itself when it is imported)."""


def step_run(*, context_only: bool = False) -> RunState | None:
    """The run a step made here belongs to: the run of this context; else (unless ``context_only``) the
    only run active in the process; else, inside ``record()``, the block's implicit run; else None."""
    run = current_run.get()
    if run is not None:
        return run
    if not context_only:
        with _active_lock:
            if len(_active_runs) == 1:
                return next(iter(_active_runs))
    recording = current_recording.get()
    if recording is not None and implicit_hooks:
        return implicit_hooks[0](recording)
    return None


def active_run() -> RunState | None:
    """The run of this context, else the only run active in the process, else None."""
    run = current_run.get()
    if run is not None:
        return run
    with _active_lock:
        if len(_active_runs) == 1:
            return next(iter(_active_runs))
    return None


class ReplayHook(Protocol):
    """What instrumentation asks of an active replay (implemented by ``replay.ReplaySession``)."""

    spans: bool

    @property
    def pace(self) -> bool: ...

    def call(self, spec: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...

    async def call_async(
        self, spec: Any, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any: ...

    def stream(
        self, spec: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Iterator[Any]: ...

    def stream_async(
        self, spec: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]: ...

    def begin_run(
        self, agent_name: str, run_id: str, input_hash: str | None = None
    ) -> tuple[dict[str, Any], list[Link], object]: ...

    def end_run(self, output: object, span: Span) -> None:
        """The run ends with ``output``; its ``span`` is still open (it ends right after)."""
        ...


current_replay: ContextVar[ReplayHook | None] = ContextVar("agent_replay_replay", default=None)
"""The active replay session, if any."""
