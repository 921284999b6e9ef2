"""``open_store`` and ``Store``: the evidence store's connection, ingest, evaluations and look-ups."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.tape import Tape

from ._backend import Backend
from ._ingest import IngestResult, ingest_tape, normalise_tags, write_tags
from ._postgres import PostgresBackend
from ._schema import migrate, schema_version
from ._session_rows import (
    EvalRow,
    Evaluation,
    MessageRow,
    SessionRow,
    ToolCallRow,
    check_evaluation,
    columns,
    eval_id_of,
    eval_row,
    session_row,
)
from ._sqlite import SqliteBackend

__all__ = ["EvalRow", "Evaluation", "MessageRow", "SessionRow", "Store", "ToolCallRow", "open_store"]

RowT = TypeVar("RowT")

_PG_SCHEMES: Final = ("postgresql://", "postgres://")
_STATUSES: Final = frozenset({"running", "success", "failed", "aborted"})


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
            check_evaluation(session_id, ev)
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
                f"INSERT INTO eval_record ({columns(EvalRow)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
            rows = tx.fetchall(f"SELECT {columns(SessionRow)} FROM agent_session WHERE session_id = ?", (session_id,))
        if not rows:
            raise KeyError(f"no session {session_id!r} in the evidence store {self.location!r}")
        return session_row(rows[0])

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
        cols = ", ".join(f"s.{c}" for c in columns(SessionRow).split(", "))
        with self._backend.read() as tx:
            rows = tx.fetchall(f"SELECT {cols} FROM agent_session s{where} ORDER BY s.started_at, s.session_id", params)
        return [session_row(r) for r in rows]

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
                f"SELECT {columns(EvalRow)} FROM eval_record WHERE session_id = ? ORDER BY created_at, eval_id",
                (session_id,),
            )
        return [eval_row(r) for r in rows]

    def _rows(self, cls: type[RowT], table: str, session_id: str) -> list[RowT]:
        with self._backend.read() as tx:
            rows = tx.fetchall(f"SELECT {columns(cls)} FROM {table} WHERE session_id = ? ORDER BY seq", (session_id,))
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
