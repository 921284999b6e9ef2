"""The loaded form of a tape: ``Tape`` → ``Run`` → ``Step`` (frozen values).

Arguments and results are kept as the JSON text found in the span and parsed
on access, so a loaded tape costs about its size in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from otel_agent_replay.core.attributes import RESULT_STAND_INS, STAND_INS


@dataclass(frozen=True, slots=True)
class StepError:
    """A recorded failure: the exception's type name and message."""

    type: str
    message: str


def _parse(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # Foreign spans may carry plain text where we write JSON.
        return text


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call or model call of a run, as recorded."""

    kind: str
    """``"tool"`` or ``"llm"``."""
    tool: str
    """Tool name; for a model step, the decorated function's name."""
    args_json: str
    result_json: str | None
    error: StepError | None
    seq: int
    step_id: str
    parent_step_id: str
    side_effect: str | None
    """``read_only``, ``write``, ``external``, or None when undeclared."""
    tool_version: str | None
    call_key: str
    start_ns: int
    end_ns: int
    run_id: str
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    result_truncated: bool = False
    result_sha256: str | None = None
    expires_at: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def args(self) -> Any:
        """The recorded (redacted, canonical) arguments, parsed from JSON."""
        return _parse(self.args_json)

    @property
    def result(self) -> Any:
        """The recorded (redacted, possibly shortened) result, parsed from JSON."""
        return _parse(self.result_json)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


# ``Step(...)`` sets each of its 26 fields through ``object.__setattr__`` (the frozen dataclass's
# ``__init__``), ~1.8 µs a step; setting the slots through their descriptors directly is half that,
# and the loader makes a ``Step`` for every step span. ``new_step`` must list the fields in order:
# tests/tape/test_values.py compares its parameters with ``fields(Step)``.
_new = object.__new__
(
    _kind,
    _tool,
    _args_json,
    _result_json,
    _error,
    _seq,
    _step_id,
    _parent_step_id,
    _side_effect,
    _tool_version,
    _call_key,
    _start_ns,
    _end_ns,
    _run_id,
    _trace_id,
    _span_id,
    _parent_span_id,
    _name,
    _result_truncated,
    _result_sha256,
    _expires_at,
    _model,
    _provider,
    _input_tokens,
    _output_tokens,
    _attributes,
) = (getattr(Step, f.name).__set__ for f in fields(Step))


def new_step(
    kind: str,
    tool: str,
    args_json: str,
    result_json: str | None,
    error: StepError | None,
    seq: int,
    step_id: str,
    parent_step_id: str,
    side_effect: str | None,
    tool_version: str | None,
    call_key: str,
    start_ns: int,
    end_ns: int,
    run_id: str,
    trace_id: str,
    span_id: str,
    parent_span_id: str,
    name: str,
    result_truncated: bool,
    result_sha256: str | None,
    expires_at: str | None,
    model: str | None,
    provider: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    attributes: Mapping[str, Any],
) -> Step:
    """The ``Step`` of these field values (every field, in order): equal to ``Step(...)``, made faster."""
    step: Step = _new(Step)
    _kind(step, kind)
    _tool(step, tool)
    _args_json(step, args_json)
    _result_json(step, result_json)
    _error(step, error)
    _seq(step, seq)
    _step_id(step, step_id)
    _parent_step_id(step, parent_step_id)
    _side_effect(step, side_effect)
    _tool_version(step, tool_version)
    _call_key(step, call_key)
    _start_ns(step, start_ns)
    _end_ns(step, end_ns)
    _run_id(step, run_id)
    _trace_id(step, trace_id)
    _span_id(step, span_id)
    _parent_span_id(step, parent_span_id)
    _name(step, name)
    _result_truncated(step, result_truncated)
    _result_sha256(step, result_sha256)
    _expires_at(step, expires_at)
    _model(step, model)
    _provider(step, provider)
    _input_tokens(step, input_tokens)
    _output_tokens(step, output_tokens)
    _attributes(step, attributes)
    return step


@dataclass(frozen=True, slots=True)
class Run:
    """One run: its run span's facts and its steps in seq order."""

    run_id: str
    trace_id: str
    span_id: str
    agent_name: str
    agent_version: str | None
    task: str | None
    input_json: str | None
    output_json: str | None
    steps: tuple[Step, ...]
    complete: bool = True
    """False when the run span never reached the tape (the process died mid-run)."""
    conversation_id: str | None = None
    mode: str | None = None
    replay_of: str | None = None
    recorded_at: str | None = None
    error: StepError | None = None
    start_ns: int = 0
    end_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def input(self) -> Any:
        """The run's recorded input, parsed from JSON."""
        return _parse(self.input_json)

    @property
    def output(self) -> Any:
        """The run's recorded output (``set_output``), parsed from JSON."""
        return _parse(self.output_json)


@dataclass(frozen=True, slots=True)
class Tape:
    """A loaded tape: its runs in recorded order."""

    path: str
    runs: tuple[Run, ...]
    warnings: tuple[str, ...] = ()
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What replays derive from the whole tape, made once per loaded tape and kept while it lives (the
    recorded argument texts: ``replayer``), so a replay session does not scan every step again."""

    def run(self, run_id: str) -> Run:
        """The run with this run_id; ``KeyError`` names the run ids there are."""
        for run in self.runs:
            if run.run_id == run_id:
                return run
        known = ", ".join(r.run_id for r in self.runs) or "none"
        raise KeyError(f"{self.path}: no run {run_id!r} (runs on this tape: {known})")

    def stand_in_values(self) -> list[object]:
        """The ``agent_replay.stand_ins`` values of every step (arguments first, then results), for
        ``capture.StandInTable.from_attributes``."""
        steps = [step for run in self.runs for step in run.steps]
        return [step.attributes.get(STAND_INS) for step in steps] + [
            step.attributes.get(RESULT_STAND_INS) for step in steps
        ]

    def runs_of_trace(self, trace_id: str) -> tuple[Run, ...]:
        """The runs of one trace (a task and its retries), in recorded order."""
        return tuple(r for r in self.runs if r.trace_id == trace_id)

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)


__all__ = ["Run", "Step", "StepError", "Tape", "new_step"]
