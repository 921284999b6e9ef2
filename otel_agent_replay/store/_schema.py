"""The store's schema: the four contract tables, the tables added beside them, and migrations.

One schema for SQLite and PostgreSQL; only column types are spelled per database (``{text}``,
``{int}`` for 64-bit integers, ``{real}``, ``{bool}``). Times are epoch milliseconds. JSON
columns (``tags``, ``extra``, ``tool_calls_json``, ``arguments``, ``result_json``, ``input``) hold
JSON text in both databases, so a reader needs no driver-specific type.

``schema_version`` has one row per applied migration. Opening a store applies the missing
migrations in one write transaction (SQLite's write lock, or a PostgreSQL advisory lock), so
processes opening one store together migrate it once; a store written by a newer version of
otel-agent-replay is refused rather than misread.

Added beyond the contract (ARCHITECTURE.md, "Evidence store"):

- ``agent_session.latency_ms``: the run span's duration at nanosecond precision (``finished_at -
  started_at`` is whole milliseconds), what the report's latency metrics average;
- ``message.step_seq``: the seq of the model step a message came from, to interleave messages
  with ``tool_call.seq`` on one timeline (``message.seq`` is the message's place in the transcript);
- ``eval_record.explanation``: the evaluator's reason (an LLM judge's words, a rule's finding);
- ``session_tag``: one row per (tag, session), the index behind "sessions by tag";
- ``tape_span``: every ingested span as one OTLP JSON line with its token counts, so a stored
  session can be written back as a tape that ``load_tape`` and ``replay`` accept;
- ``agent_session.case_id`` and ``agent_session.repetition`` (migration 2): the recorded run a
  replayed session ran again (its case, from ``agent_replay.replay_of``) and which repetition of
  ``regress(..., repeat=k)`` it was (``agent_replay.repetition``), what the per-case pass rates and
  verdicts count. Migration 2 fills them in for sessions stored before it: a replay's case from its
  ``extra.replay_of``, as repetition 1.
"""

from __future__ import annotations

import time
from typing import Final

from otel_agent_replay.core import ConfigurationError

from ._backend import Backend, Dialect, Tx

__all__ = ["LATEST_VERSION", "MIGRATIONS", "migrate", "schema_version"]

_TYPES: Final[dict[Dialect, dict[str, str]]] = {
    "sqlite": {"text": "TEXT", "int": "INTEGER", "real": "REAL", "bool": "INTEGER"},
    "postgresql": {"text": "TEXT", "int": "BIGINT", "real": "DOUBLE PRECISION", "bool": "BOOLEAN"},
}
_EXPRESSIONS: Final[dict[Dialect, dict[str, str]]] = {
    "sqlite": {"replay_of": "json_extract(extra, '$.replay_of')"},
    "postgresql": {"replay_of": "(extra::jsonb ->> 'replay_of')"},
}
"""The few expressions that differ per database, spelled like the types (``{replay_of}``)."""

_V1: Final = (
    """CREATE TABLE agent_session (
        session_id {text} PRIMARY KEY,
        trace_id {text} NOT NULL,
        agent_name {text} NOT NULL,
        agent_version {text},
        task {text},
        input {text},
        input_hash {text},
        started_at {int} NOT NULL,
        finished_at {int},
        status {text} NOT NULL CHECK (status IN ('running', 'success', 'failed', 'aborted')),
        tags {text} NOT NULL DEFAULT '[]',
        extra {text} NOT NULL DEFAULT '{{}}',
        latency_ms {real}
    )""",
    "CREATE INDEX agent_session_by_version ON agent_session (agent_version, agent_name)",
    "CREATE INDEX agent_session_by_agent ON agent_session (agent_name, started_at)",
    """CREATE TABLE message (
        msg_id {text} PRIMARY KEY,
        session_id {text} NOT NULL REFERENCES agent_session (session_id) ON DELETE CASCADE,
        seq {int} NOT NULL,
        role {text} NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content {text},
        tool_calls_json {text},
        created_at {int} NOT NULL,
        step_seq {int} NOT NULL
    )""",
    "CREATE INDEX message_by_session ON message (session_id, seq)",
    """CREATE TABLE tool_call (
        call_id {text} PRIMARY KEY,
        session_id {text} NOT NULL REFERENCES agent_session (session_id) ON DELETE CASCADE,
        message_id {text} REFERENCES message (msg_id) ON DELETE SET NULL,
        step_id {text} NOT NULL,
        parent_step_id {text} NOT NULL,
        seq {int} NOT NULL,
        tool_name {text} NOT NULL,
        tool_version {text},
        side_effect {text},
        call_key {text} NOT NULL,
        arguments {text},
        result_json {text},
        latency_ms {real},
        status {text} NOT NULL CHECK (status IN ('ok', 'error', 'timeout')),
        error {text},
        created_at {int} NOT NULL
    )""",
    "CREATE INDEX tool_call_by_session ON tool_call (session_id, seq)",
    "CREATE INDEX tool_call_by_error ON tool_call (error)",
    """CREATE TABLE eval_record (
        eval_id {text} PRIMARY KEY,
        session_id {text} NOT NULL REFERENCES agent_session (session_id) ON DELETE CASCADE,
        tool_call_id {text} REFERENCES tool_call (call_id) ON DELETE CASCADE,
        case_group {text},
        metric {text} NOT NULL,
        score {real},
        pass {bool},
        judge_model {text},
        criteria_version {text},
        created_at {int} NOT NULL,
        explanation {text}
    )""",
    "CREATE INDEX eval_record_by_session ON eval_record (session_id)",
    """CREATE TABLE session_tag (
        tag {text} NOT NULL,
        session_id {text} NOT NULL REFERENCES agent_session (session_id) ON DELETE CASCADE,
        PRIMARY KEY (tag, session_id)
    )""",
    "CREATE INDEX session_tag_by_session ON session_tag (session_id)",
    """CREATE TABLE tape_span (
        trace_id {text} NOT NULL,
        span_id {text} NOT NULL,
        session_id {text} NOT NULL REFERENCES agent_session (session_id) ON DELETE CASCADE,
        kind {text} NOT NULL CHECK (kind IN ('run', 'tool', 'llm')),
        seq {int},
        model {text},
        input_tokens {int},
        output_tokens {int},
        otlp_json {text} NOT NULL,
        PRIMARY KEY (trace_id, span_id)
    )""",
    "CREATE INDEX tape_span_by_session ON tape_span (session_id, seq)",
)

_V2: Final = (
    "ALTER TABLE agent_session ADD COLUMN case_id {text}",
    "ALTER TABLE agent_session ADD COLUMN repetition {int}",
    "UPDATE agent_session SET case_id = {replay_of}, repetition = 1 WHERE {replay_of} IS NOT NULL",
    "CREATE INDEX agent_session_by_case ON agent_session (case_id, agent_version)",
)

MIGRATIONS: Final[tuple[tuple[int, str, tuple[str, ...]], ...]] = (
    (1, "the four contract tables, session_tag and tape_span", _V1),
    (2, "agent_session.case_id and repetition: repeated runs of a recorded case", _V2),
)
"""(version, description, statements), in order. A new migration is appended, never edited."""

LATEST_VERSION: Final = MIGRATIONS[-1][0]

_VERSION_TABLE: Final = """CREATE TABLE IF NOT EXISTS schema_version (
    version {int} PRIMARY KEY,
    applied_at {int} NOT NULL,
    description {text} NOT NULL
)"""
_PG_LOCK: Final = "SELECT pg_advisory_xact_lock(7254023188112399361)"


def _spell(statement: str, dialect: Dialect) -> str:
    return statement.format(**_TYPES[dialect], **_EXPRESSIONS[dialect])


def _current(tx: Tx) -> int:
    rows = tx.fetchall("SELECT MAX(version) FROM schema_version")
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def migrate(backend: Backend) -> int:
    """Bring the store's schema to ``LATEST_VERSION``; returns the version it had before."""
    with backend.write() as tx:
        if backend.dialect == "postgresql":
            tx.execute(_PG_LOCK)
        tx.execute(_spell(_VERSION_TABLE, backend.dialect))
        before = _current(tx)
        if before > LATEST_VERSION:
            raise ConfigurationError(
                f"the evidence store {backend.location!r} has schema version {before}, newer than this "
                f"otel-agent-replay knows ({LATEST_VERSION}): upgrade otel-agent-replay to use it"
            )
        for version, description, statements in MIGRATIONS:
            if version <= before:
                continue
            for statement in statements:
                tx.execute(_spell(statement, backend.dialect))
            tx.execute(
                "INSERT INTO schema_version (version, applied_at, description) VALUES (?, ?, ?)",
                (version, int(time.time() * 1000), description),
            )
    return before


def schema_version(backend: Backend) -> int:
    """The schema version the store is at."""
    with backend.read() as tx:
        return _current(tx)
