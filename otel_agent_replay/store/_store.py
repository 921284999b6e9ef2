"""``open_store`` and ``Store``: the evidence store's connection, ingest, evaluations and look-ups."""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

import orjson

from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.tape import Tape

from ._backend import Backend, RowTuple
from ._ingest import IngestResult, ingest_tape, normalise_tags, write_tags
from ._postgres import PostgresBackend
from ._schema import migrate, schema_version
from ._sqlite import SqliteBackend

__all__ = ["EvalRow", "Evaluation", "MessageRow", "SessionRow", "Store", "ToolCallRow", "open_store"]

_PG_SCHEMES: Final = ("postgresql://", "postgres://")
_STATUSES: Final = frozenset({"running", "success", "failed", "aborted"})


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


RowT = TypeVar("RowT")


def _columns(cls: type[Any]) -> str:
    return ", ".join("pass" if f.name == "passed" else f.name for f in fields(cls))


def _session(row: RowTuple) -> SessionRow:
    values = list(row)
    values[10] = tuple(orjson.loads(values[10] or "[]"))
    values[11] = orjson.loads(values[11] or "{}")
    return SessionRow(*values)


def _eval(row: RowTuple) -> EvalRow:
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


class Store:
    """An evidence store: sessions, messages, tool calls and evaluations, by agent version.

    Made by ``open_store``. One ``Store`` per process (it holds one connection; threads share it
    under a lock); any number of processes may open the same store. Use it as a context manager,
    or call ``close``.
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        try:
            migrate(backend)
        except BaseException:
            backend.close()
            raise

    @property
    def location(self) -> str:
        """The SQLite file, or the PostgreSQL URL without its password."""
        return self._backend.location

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._backend.dialect

    @property
    def schema_version(self) -> int:
        """The version of the store's schema (the highest row of ``schema_version``)."""
        return schema_version(self._backend)

    def close(self) -> None:
        """Close the connection."""
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- writing ------------------------------------------------------------------------

    def ingest(self, source: str | os.PathLike[str] | Tape, *, tags: Iterable[str] = ()) -> IngestResult:
        """Ingest a tape (a path, or a loaded ``Tape``): its runs become sessions, in one transaction.

        Idempotent: a span ingested again is the same row. ``tags`` are added to every session of
        the tape. Raises what ``load_tape`` raises for a missing or malformed tape, before writing.
        """
        return ingest_tape(self._backend, source, tags)

    def tag(self, session_id: str, *tags: str) -> None:
        """Add tags to a stored session."""
        self._require_session(session_id)
        with self._backend.write() as tx:
            write_tags(tx, [session_id], normalise_tags(tags))

    def delete_session(self, session_id: str) -> bool:
        """Remove a session and everything of it (messages, tool calls, evaluations, tags, spans); False if absent."""
        with self._backend.write() as tx:
            found = bool(tx.fetchall("SELECT 1 FROM agent_session WHERE session_id = ?", (session_id,)))
            if found:
                tx.execute("DELETE FROM agent_session WHERE session_id = ?", (session_id,))
        return found

    def add_eval(
        self,
        session_id: str,
        metric: str,
        *,
        score: float | None = None,
        passed: bool | None = None,
        judge_model: str | None = None,
        criteria_version: str | None = None,
        explanation: str | None = None,
        tool_call_id: str | None = None,
        case_group: str | None = None,
    ) -> str:
        """Store one evaluation of a session; returns its ``eval_id``.

        The same metric judged again by the same judge under the same ``criteria_version`` replaces
        the earlier row; a new ``criteria_version`` adds a row beside it.
        """
        evaluation = Evaluation(
            metric, score, passed, judge_model, criteria_version, explanation, tool_call_id, case_group
        )
        return self.add_evals(session_id, (evaluation,))[0]

    def add_evals(self, session_id: str, evaluations: Iterable[Evaluation]) -> list[str]:
        """Store evaluations of one session in one transaction; returns their ``eval_id``s."""
        self._require_session(session_id)
        rows = []
        now = int(time.time() * 1000)
        for ev in evaluations:
            _check_evaluation(session_id, ev)
            rows.append(
                (
                    eval_id_of(session_id, ev),
                    session_id,
                    ev.tool_call_id,
                    ev.case_group,
                    ev.metric,
                    None if ev.score is None else float(ev.score),
                    ev.passed,
                    ev.judge_model,
                    ev.criteria_version,
                    now,
                    ev.explanation,
                )
            )
        calls = {r[2] for r in rows if r[2] is not None}
        with self._backend.write() as tx:
            for call_id in calls:
                if not tx.fetchall(
                    "SELECT 1 FROM tool_call WHERE call_id = ? AND session_id = ?", (call_id, session_id)
                ):
                    raise ConfigurationError(
                        f"evaluation of session {session_id!r}: no tool call {call_id!r} in that session "
                        f"(tool_call_id is '<session_id>:<seq>'; see Store.tool_calls)"
                    )
            tx.executemany(
                f"INSERT INTO eval_record ({_columns(EvalRow)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (eval_id) DO UPDATE SET score = excluded.score, pass = excluded.pass, "
                "created_at = excluded.created_at, explanation = excluded.explanation",
                rows,
            )
        return [r[0] for r in rows]

    # --- reading ------------------------------------------------------------------------

    def _require_session(self, session_id: str) -> None:
        with self._backend.read() as tx:
            if not tx.fetchall("SELECT 1 FROM agent_session WHERE session_id = ?", (session_id,)):
                raise ConfigurationError(
                    f"no session {session_id!r} in the evidence store {self.location!r}: ingest its tape first "
                    f"(Store.ingest or otel-agent-replay ingest)"
                )

    def session(self, session_id: str) -> SessionRow:
        """One session; ``KeyError`` when the store has none with this id."""
        with self._backend.read() as tx:
            rows = tx.fetchall(f"SELECT {_columns(SessionRow)} FROM agent_session WHERE session_id = ?", (session_id,))
        if not rows:
            raise KeyError(f"no session {session_id!r} in the evidence store {self.location!r}")
        return _session(rows[0])

    def sessions(
        self,
        *,
        tag: str | None = None,
        agent_name: str | None = None,
        agent_version: str | None = None,
        status: str | None = None,
    ) -> list[SessionRow]:
        """Sessions that match every filter given, oldest first (by ``started_at``, then id)."""
        if status is not None and status not in _STATUSES:
            raise ConfigurationError(f"status {status!r} is not one of {sorted(_STATUSES)}")
        where, params = session_filter(tag=tag, agent_name=agent_name, agent_version=agent_version, status=status)
        cols = ", ".join(f"s.{c}" for c in _columns(SessionRow).split(", "))
        with self._backend.read() as tx:
            rows = tx.fetchall(f"SELECT {cols} FROM agent_session s{where} ORDER BY s.started_at, s.session_id", params)
        return [_session(r) for r in rows]

    def messages(self, session_id: str) -> list[MessageRow]:
        """A session's transcript, in seq order."""
        return self._rows(MessageRow, "message", session_id)

    def tool_calls(self, session_id: str) -> list[ToolCallRow]:
        """A session's tool calls, in seq order."""
        return self._rows(ToolCallRow, "tool_call", session_id)

    def evals(self, session_id: str) -> list[EvalRow]:
        """A session's evaluations, oldest first."""
        with self._backend.read() as tx:
            rows = tx.fetchall(
                f"SELECT {_columns(EvalRow)} FROM eval_record WHERE session_id = ? ORDER BY created_at, eval_id",
                (session_id,),
            )
        return [_eval(r) for r in rows]

    def _rows(self, cls: type[RowT], table: str, session_id: str) -> list[RowT]:
        with self._backend.read() as tx:
            rows = tx.fetchall(f"SELECT {_columns(cls)} FROM {table} WHERE session_id = ? ORDER BY seq", (session_id,))
        return [cls(*r) for r in rows]

    def span_lines(self, session_id: str) -> list[str]:
        """The session's spans as OTLP JSON lines: steps in seq order, then the run span (as a tape has them)."""
        with self._backend.read() as tx:
            rows = tx.fetchall(
                "SELECT otlp_json FROM tape_span WHERE session_id = ? "
                "ORDER BY CASE WHEN kind = 'run' THEN 1 ELSE 0 END, seq, span_id",
                (session_id,),
            )
        return [r[0] for r in rows]

    def counts(self) -> dict[str, int]:
        """Rows per table: the four contract tables, ``session_tag`` and ``tape_span``."""
        tables = ("agent_session", "message", "tool_call", "eval_record", "session_tag", "tape_span")
        with self._backend.read() as tx:
            return {t: int(tx.fetchall(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in tables}


def session_filter(
    *,
    tag: str | None = None,
    agent_name: str | None = None,
    agent_version: str | None = None,
    status: str | None = None,
    alias: str = "s",
) -> tuple[str, list[Any]]:
    """A ``WHERE`` clause (with its leading space, or empty) over ``agent_session`` as ``alias``."""
    clauses: list[str] = []
    params: list[Any] = []
    if tag is not None:
        clauses.append(f"EXISTS (SELECT 1 FROM session_tag t WHERE t.session_id = {alias}.session_id AND t.tag = ?)")
        params.append(tag)
    for column, value in (("agent_name", agent_name), ("agent_version", agent_version), ("status", status)):
        if value is not None:
            clauses.append(f"{alias}.{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _check_evaluation(session_id: str, ev: Evaluation) -> None:
    where = f"evaluation {ev.metric!r} of session {session_id!r}"
    if not isinstance(ev.metric, str) or not ev.metric.strip():
        raise ConfigurationError(f"evaluation of session {session_id!r}: metric must be a non-empty name")
    if ev.score is not None and (
        isinstance(ev.score, bool) or not isinstance(ev.score, (int, float)) or not math.isfinite(ev.score)
    ):
        raise ConfigurationError(f"{where}: score {ev.score!r} is not a finite number (or None)")
    if ev.passed is not None and not isinstance(ev.passed, bool):
        raise ConfigurationError(f"{where}: passed {ev.passed!r} must be True, False or None")


def open_store(path_or_url: str | os.PathLike[str]) -> Store:
    """Open (creating and migrating when needed) an evidence store.

    A path is a SQLite file (WAL journal, foreign keys on, a busy timeout: several processes may
    write it at once); a ``postgresql://`` URL is a PostgreSQL database, through psycopg 3
    (``pip install 'otel-agent-replay[postgres]'``). Both have the same schema.
    """
    if isinstance(path_or_url, str):
        text = path_or_url.strip()
        if text.lower().startswith(_PG_SCHEMES):
            return Store(PostgresBackend(text))
        if text.lower().startswith("sqlite:///"):
            text = text[len("sqlite:///") :]  # sqlite:///relative/path, sqlite:////absolute/path
        elif "://" in text:
            scheme = text.split("://", 1)[0]
            raise ConfigurationError(
                f"evidence store {scheme}://…: unknown scheme {scheme!r}; give a SQLite file path or a "
                f"postgresql://user@host/dbname URL"
            )
        if not text:
            raise ConfigurationError("evidence store: empty path; give a SQLite file path or a postgresql:// URL")
        return Store(SqliteBackend(Path(text)))
    return Store(SqliteBackend(Path(os.fspath(path_or_url))))
