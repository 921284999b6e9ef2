"""Which recorded run a live run replays: the runs a replay serves, the live run bound to one,
and the words for a live run whose agent the tape does not have.
"""

from __future__ import annotations

import threading

from otel_agent_replay.core import ConfigurationError, UnknownAgent
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import RunState
from otel_agent_replay.tape import Run, Step, Tape

from ._index import RunIndex
from ._options import ReplayOptions


class ReplayRun:
    """A live run bound to the recorded run it replays (or to none: every call misses)."""

    def __init__(self, index: RunIndex | None, state: RunState | None) -> None:
        self.index = index
        self.state = state
        self.limits_applied = False
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._latest_done: Step | None = None
        """Of the recorded steps whose live call has ended, the one that started last when recorded."""

    def order_before(self, step: Step) -> Step | None:
        """A recorded step whose live call has already ended although, when recorded, it started only
        after ``step`` had ended: the two ran one after the other, the other way round (an ``order``
        divergence). Steps whose live calls overlap are never compared: the later one is not done."""
        latest = self._latest_done
        if latest is not None and 0 < step.end_ns <= latest.start_ns:
            return latest
        return None

    def served(self, step: Step) -> None:
        """The live call that ``step`` answered has ended."""
        with self._lock:
            latest = self._latest_done
            if latest is None or step.start_ns > latest.start_ns:
                self._latest_done = step

    @property
    def recorded_id(self) -> str:
        return self.index.run.run_id if self.index is not None else ""

    def position(self, tool: str) -> int:
        with self._lock:
            n = self._counts.get(tool, 0) + 1
            self._counts[tool] = n
            return n


def take_run(queue: list[Run], agent_name: str, input_hash: str | None) -> Run | None:
    """The first queued run of this agent with this input hash, else of this agent; taken off the queue.

    Runs whose agent the tape does not say (foreign or incomplete runs) serve any agent, in order.
    """
    same = [n for n, run in enumerate(queue) if run.agent_name == agent_name]
    if input_hash is not None:
        same_input = [n for n in same if queue[n].attributes.get(A.INPUT_HASH) == input_hash]
        same = same_input or same
    if not same:
        same = [n for n, run in enumerate(queue) if not run.agent_name]
    return queue.pop(same[0]) if same else None


def peek_implicit(queue: list[Run]) -> Run | None:
    """The recorded run that calls outside every live ``agent_run`` replay: the first queued implicit run
    (a record block's own run), else the first queued run (left on the queue)."""
    for run in queue:
        if run.attributes.get(A.IMPLICIT_RUN) is True:
            return run
    return queue[0] if queue else None


def has_agent(runs: tuple[Run, ...], agent_name: str) -> bool:
    """Whether the replayed runs can serve this agent (any run of it, or a run that names no agent)."""
    return not runs or any(run.agent_name in (agent_name, "") for run in runs)


def unknown_agent(runs: tuple[Run, ...], agent_name: str, run_id: str, tape_path: str | None) -> UnknownAgent:
    """The error for a live run whose agent has no recorded run: it names the agents the tape has."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.agent_name] = counts.get(run.agent_name, 0) + 1
    agents = ", ".join(f"{name!r} ({n} run{'s' if n > 1 else ''})" for name, n in counts.items())
    return UnknownAgent(
        f"agent_run({agent_name!r}) (run {run_id}) has no recorded run on {tape_path}: the tape has runs "
        f"of {agents}. Use the agent name the tape was recorded with, or record this agent (mode='once' "
        "records a missing tape, mode='all' records it again)"
    )


def select_runs(tape: Tape, options: ReplayOptions) -> tuple[Run, ...]:
    """The recorded runs a replay serves: one by ``run_id``, those of ``trace_id``, else all, in order."""
    runs = tape.runs
    if options.run_id is not None:
        return (tape.run(options.run_id),)
    if options.trace_id is not None:
        selected = tape.runs_of_trace(options.trace_id)
        if not selected:
            raise ConfigurationError(f"{tape.path}: no run of trace {options.trace_id!r} on this tape")
        return selected
    return runs
