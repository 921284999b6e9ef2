"""Where a replay forked, and the state of one replay's fork."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.trace import Link, Span, SpanContext, TraceFlags

from otel_agent_replay.core import Then
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Step


@dataclass(frozen=True, slots=True)
class Fork:
    """Where a replay forked: the recorded step it left the recording at (None when the agent made a call
    the recording has no step for), the live call that differed, why, and the difference."""

    run_id: str
    """The recorded run that forked."""
    step_id: str | None
    """The recorded step where the live run first differed (``search#2``), or None for a call with no
    recorded counterpart."""
    tool: str
    """The tool (or model route) of the live call that differed."""
    seq: int
    """The live call's seq."""
    cause: str
    """``drift`` (same call, other arguments), ``miss`` (a call the recording does not have)."""
    difference: str
    """What differed, in words (field paths for drift)."""
    tape: str | None = None
    """The tape the forked run is written to."""

    def __str__(self) -> str:
        where = f"at {self.step_id}" if self.step_id else f"at a call of {self.tool} the recording does not have"
        return f"forked {where} (run {self.run_id}, live seq {self.seq}, {self.cause}): {self.difference}"


def fork_tape_for(tape: str | Path) -> Path:
    """The default tape of a forked run: beside the recording, ``NAME.fork.jsonl``."""
    path = Path(tape)
    return path.with_name(f"{path.stem}.fork{path.suffix or '.jsonl'}")


def _link_to(step: Step) -> list[Link]:
    try:
        context = SpanContext(int(step.trace_id, 16), int(step.span_id, 16), True, TraceFlags(TraceFlags.SAMPLED))
    except (TypeError, ValueError):
        return []
    return [Link(context, {A.FORKED_FROM: f"{step.run_id}:{step.step_id}"})] if context.is_valid else []


class ForkState:
    """One replay's fork: ``then`` says what happens at the first divergence; ``fork`` notes it once."""

    def __init__(self, then: Then, tape: Path | None, recording: str | None = None) -> None:
        self.then = then
        self.tape = tape
        self.recording = recording
        """The recording's tape (written on the forked run's span, ``agent_replay.fork.tape``)."""
        self._fork: Fork | None = None
        self._lock = threading.Lock()
        self._edited: dict[int, dict[str, Any]] = {}  # run span id → the edits it was served

    def edited(self, *, run_id: str, step: Step, value: Any, run_span: Span | None) -> None:
        """An edited step was served: the live run's span says it is a fork of that step, with that edit
        (``value``: the edit as redacted JSON data), and links to the recorded step."""
        if run_span is None or not run_span.is_recording():
            return
        with self._lock:
            edits = self._edited.setdefault(run_span.get_span_context().span_id, {})
            first = not edits
            edits[step.step_id] = value
            text = orjson.dumps(edits).decode("utf-8")
        run_span.set_attribute(A.FORK_EDIT, text)
        if first:
            run_span.set_attribute(A.FORKED_FROM, f"{run_id}:{step.step_id}")
            if self.recording:
                run_span.set_attribute(A.FORK_TAPE, self.recording)
        for link in _link_to(step):
            run_span.add_link(link.context, link.attributes)

    @property
    def forks(self) -> bool:
        """Whether a divergence forks the replay rather than failing it."""
        return self.then != Then.RAISE

    @property
    def forked(self) -> bool:
        """Whether the replay has forked already."""
        return self._fork is not None

    @property
    def fork(self) -> Fork | None:
        """Where the replay forked, or None."""
        return self._fork

    def begin(
        self,
        *,
        run_id: str,
        step: Step | None,
        tool: str,
        seq: int,
        cause: str,
        difference: str,
        run_span: Span | None,
    ) -> Fork:
        """Note the fork (the first call wins) and mark the live run's span as forked from the recorded step."""
        with self._lock:
            if self._fork is not None:
                return self._fork
            fork = self._fork = Fork(
                run_id,
                step.step_id if step is not None else None,
                tool,
                seq,
                cause,
                difference,
                str(self.tape) if self.tape else None,
            )
        if run_span is not None and run_span.is_recording():
            with self._lock:
                edited = run_span.get_span_context().span_id in self._edited
            if not edited:  # an edited run forked at its (first) edit already
                run_span.set_attribute(A.FORKED_FROM, f"{run_id}:{fork.step_id or ''}")
                if self.recording:
                    run_span.set_attribute(A.FORK_TAPE, self.recording)
            if fork.step_id:
                run_span.set_attribute(A.FORK_DIVERGED_AT, fork.step_id)
            for link in _link_to(step) if step is not None else ():
                run_span.add_link(link.context, link.attributes)
        return fork
