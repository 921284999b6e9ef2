"""What the evidence store's look-ups return (a row of each table as a frozen value) and what an
evaluator gives it (``Evaluation``, checked before it is kept, keyed by ``eval_id_of``)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, fields
from typing import Any

import orjson

from otel_agent_replay.core import ConfigurationError

from ._backend import RowTuple

__all__ = [
    "EvalRow",
    "Evaluation",
    "MessageRow",
    "SessionRow",
    "ToolCallRow",
    "check_evaluation",
    "columns",
    "eval_id_of",
    "eval_row",
    "session_row",
]


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One ``agent_session`` row (``tags`` and ``extra`` parsed from their JSON)."""

    session_id: str
    trace_id: str
    agent_name: str
    agent_version: str | None
    task: str | None
    input: str | None
    """The run's input as JSON text."""
    input_hash: str | None
    started_at: int
    finished_at: int | None
    status: str
    tags: tuple[str, ...]
    extra: dict[str, Any]
    latency_ms: float | None
    """The run's duration (not a contract column: see ``_schema``)."""
    case_id: str | None = None
    """The recorded run this session ran again (a replay's ``replay_of``): its case; None for a recording."""
    repetition: int | None = None
    """Which repetition of its case this run was (``regress(..., repeat=k)``: 1 to k)."""


@dataclass(frozen=True, slots=True)
class MessageRow:
    """One ``message`` row."""

    msg_id: str
    session_id: str
    seq: int
    role: str
    content: str | None
    tool_calls_json: str | None
    created_at: int
    step_seq: int


@dataclass(frozen=True, slots=True)
class ToolCallRow:
    """One ``tool_call`` row."""

    call_id: str
    session_id: str
    message_id: str | None
    step_id: str
    parent_step_id: str
    seq: int
    tool_name: str
    tool_version: str | None
    side_effect: str | None
    call_key: str
    arguments: str | None
    result_json: str | None
    latency_ms: float | None
    status: str
    error: str | None
    created_at: int


@dataclass(frozen=True, slots=True)
class EvalRow:
    """One ``eval_record`` row (``pass`` is ``passed`` here: ``pass`` is a Python keyword)."""

    eval_id: str
    session_id: str
    tool_call_id: str | None
    case_group: str | None
    metric: str
    score: float | None
    passed: bool | None
    judge_model: str | None
    criteria_version: str | None
    created_at: int
    explanation: str | None


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One evaluation of a session (or of one of its tool calls), as an evaluator returns it."""

    metric: str
    score: float | None = None
    passed: bool | None = None
    judge_model: str | None = None
    """The model that judged (an LLM judge), or None for a rule."""
    criteria_version: str | None = None
    explanation: str | None = None
    tool_call_id: str | None = None
    case_group: str | None = None


def columns(cls: type[Any]) -> str:
    """The columns of a row type, in its order, as a SELECT lists them."""
    return ", ".join("pass" if f.name == "passed" else f.name for f in fields(cls))


def session_row(row: RowTuple) -> SessionRow:
    """An ``agent_session`` row as read, its tags and extra parsed."""
    values = list(row)
    values[10] = tuple(orjson.loads(values[10] or "[]"))
    values[11] = orjson.loads(values[11] or "{}")
    return SessionRow(*values)


def eval_row(row: RowTuple) -> EvalRow:
    """An ``eval_record`` row as read, ``pass`` as a bool or None."""
    values = list(row)
    values[6] = None if values[6] is None else bool(values[6])
    return EvalRow(*values)


def eval_id_of(session_id: str, evaluation: Evaluation) -> str:
    """The natural key of an evaluation: the same judgement of the same thing under the same criteria."""
    parts = (
        session_id,
        evaluation.tool_call_id,
        evaluation.metric,
        evaluation.judge_model,
        evaluation.criteria_version,
        evaluation.case_group,
    )
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


def check_evaluation(session_id: str, ev: Evaluation) -> None:
    """An evaluation a store can keep: a metric name, a finite score or None, a bool or None for passed."""
    where = f"evaluation {ev.metric!r} of session {session_id!r}"
    if not isinstance(ev.metric, str) or not ev.metric.strip():
        raise ConfigurationError(f"evaluation of session {session_id!r}: metric must be a non-empty name")
    if ev.score is not None and (
        isinstance(ev.score, bool) or not isinstance(ev.score, (int, float)) or not math.isfinite(ev.score)
    ):
        raise ConfigurationError(f"{where}: score {ev.score!r} is not a finite number (or None)")
    if ev.passed is not None and not isinstance(ev.passed, bool):
        raise ConfigurationError(f"{where}: passed {ev.passed!r} must be True, False or None")
