"""Which recorded run each live run of a replay replays: the queue of recorded runs, the live runs
bound so far, and the replay's implicit run (calls made outside every live ``agent_run``).

``ReplaySession`` holds one ``RunBinder``; ``begin_run`` (a live run starts) and ``binding`` (a call
asks which run it belongs to) are its two ways in, ``leftovers`` what the end of the replay counts.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from opentelemetry.trace import INVALID_SPAN, Link

from otel_agent_replay.capture import Capture, Limits
from otel_agent_replay.core import DivergenceKind, ModelPolicy, ReplayError
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import RunState, active_run, current_run, implicit_replay_run
from otel_agent_replay.tape import Run, Tape

from ._index import RunIndex
from ._ledger import Ledger
from ._options import ReplayOptions
from ._runs import ReplayRun, has_agent, peek_implicit, select_runs, take_run, unknown_agent
from ._serving import links


class RunBinder:
    """The runs of one replay's tape, handed to live runs in recorded order (the same input first)."""

    def __init__(
        self,
        owner: Callable[[], object | None],
        options: ReplayOptions,
        tape: Tape | None,
        ledger: Ledger,
        capture: Capture,
    ) -> None:
        self._owner = owner
        """The session, weakly (a strong reference would be a cycle): the implicit run is opened as its run
        (``implicit_replay_run``)."""
        self._options = options
        self._tape = tape
        self._ledger = ledger
        self._capture = capture
        self._lock = threading.Lock()
        self._queue: list[Run] = list(select_runs(tape, options)) if tape is not None else []
        self._bound: list[ReplayRun] = []
        self._implicit: ReplayRun | None = None
        self._implicit_lock = threading.Lock()
        self._next_implicit: Run | None = None

    def index(self, run: Run) -> RunIndex:
        """A run's steps, consumable (model steps too unless models run live)."""
        return RunIndex(run, include_models=self._options.model_policy == ModelPolicy.TAPE)

    def begin_run(
        self, agent_name: str, run_id: str, input_hash: str | None, tape_path: str | None
    ) -> tuple[dict[str, Any], list[Link], ReplayRun]:
        """Bind a live run to the next recorded run of its agent: its span attributes, links and binding."""
        with self._lock:
            recorded = self._take_run(agent_name, input_hash)
        self._ledger.bump("runs_replayed")
        if recorded is None and not has_agent(self._recorded_runs(), agent_name):
            self._ledger.fail(
                unknown_agent(self._recorded_runs(), agent_name, run_id, tape_path), "", agent_name, 0, None
            )
        bound = ReplayRun(self.index(recorded) if recorded is not None else None, None)
        with self._lock:
            self._bound.append(bound)
        if recorded is None:
            self._ledger.diverge(
                DivergenceKind.RUN_COUNT,
                "",
                agent_name,
                0,
                None,
                f"the agent started run {run_id} ({agent_name}) but the tape has no more runs of {agent_name!r} "
                "to replay",
            )
            return {A.MODE: A.MODE_REPLAY}, [], bound
        attrs: dict[str, Any] = {A.MODE: A.MODE_REPLAY, A.REPLAY_OF: recorded.run_id}
        return attrs, links(recorded.trace_id, recorded.span_id), bound

    def _take_run(self, agent_name: str, input_hash: str | None) -> Run | None:
        """Take the recorded run a live run replays off the queue (called under the lock)."""
        chosen, self._next_implicit = self._next_implicit, None
        if chosen is not None and chosen in self._queue:  # the implicit run being opened: the run chosen for it
            self._queue.remove(chosen)
            return chosen
        return take_run(self._queue, agent_name, input_hash)

    def _recorded_runs(self) -> tuple[Run, ...]:
        return select_runs(self._tape, self._options) if self._tape is not None else ()

    def binding(self) -> tuple[ReplayRun, RunState]:
        """The bound run of the call being made: its live run's, else the replay's implicit run (opened now)."""
        state = current_run.get() or active_run()
        if state is not None and isinstance(state.replay, ReplayRun):
            bound = state.replay
            if not bound.limits_applied:
                bound.limits_applied = True
                state.capture = _capture_for(bound.index.run if bound.index else None, state.capture, self._capture)
            return bound, state
        with self._lock:
            implicit = self._implicit
        if implicit is None:
            implicit = self._open_implicit()
        if not implicit.limits_applied and implicit.state is not None:
            implicit.limits_applied = True
            recorded = implicit.index.run if implicit.index else None
            implicit.state.capture = _capture_for(recorded, implicit.state.capture, self._capture)
        assert implicit.state is not None
        return implicit, implicit.state

    def _open_implicit(self) -> ReplayRun:
        """The replay's implicit run, bound to the tape's implicit run (else its next run) and opened as a
        run of that agent, so its spans are a run like any other."""
        with self._implicit_lock:
            with self._lock:
                if self._implicit is not None:
                    return self._implicit
                recorded = peek_implicit(self._queue)
                self._next_implicit = recorded
            if recorded is None:  # nothing left to replay: every call of this run misses
                implicit = ReplayRun(None, RunState("", "", INVALID_SPAN, self._capture, None))
                with self._lock:
                    self._bound.append(implicit)
            else:
                owner = self._owner()
                if owner is None:
                    raise ReplayError("this replay has ended; call doubles inside its block")
                state = implicit_replay_run(owner, recorded.agent_name or None)
                assert isinstance(state.replay, ReplayRun)
                implicit = state.replay
                implicit.state = state
            with self._lock:
                self._implicit = implicit
            return implicit

    def leftovers(self) -> tuple[list[ReplayRun], list[Run]]:
        """At the end: the live runs bound, and the recorded runs no live run took."""
        with self._lock:
            return list(self._bound), list(self._queue)


def _capture_for(recorded: Run | None, capture: Capture, replay: Capture) -> Capture:
    """``capture`` (the live run's) with what the replay knows of its tape, from ``replay`` (the session's):
    its stand-ins (an echoed one is keyed on its marker) and its recorded argument texts (a call that is one
    of them is keyed without redacting it again, ``capture._recorded``); and with the size caps the run was
    recorded with (stored on its run span), so a live argument is shortened as the recorded one was and its
    call key matches."""
    changes: dict[str, Any] = {}
    if capture.known is not replay.known:
        changes["known"] = replay.known
    if capture.recorded is not replay.recorded:
        changes["recorded"] = replay.recorded
    attrs = recorded.attributes if recorded is not None else {}
    max_string, max_result = attrs.get(A.MAX_STRING), attrs.get(A.MAX_RESULT_BYTES)
    if isinstance(max_string, int) and isinstance(max_result, int):
        limits = Limits(max_string=max_string, max_result_bytes=max_result)
        if limits != capture.limits:
            changes["limits"] = limits
    return dataclasses.replace(capture, **changes) if changes else capture
