"""Tapes → rows, one transaction per tape, every row an upsert on its natural key.

Ingesting a tape twice leaves the store as ingesting it once: a span is one row whatever the
number of times it was read. A complete run overwrites what an earlier ingest knew of its
session (the run span has the last word); an incomplete run (no run span on the tape) never
overwrites a session that is known complete. A different run under a stored run id refuses the
tape (``_duplicates``). A killed ingest leaves nothing of its tape behind:
the transaction is rolled back by the database (SQLite's journal, PostgreSQL's aborted backend).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import orjson

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.tape import Tape, load_tape

from ._backend import Backend, Tx, chunks
from ._duplicates import refuse_duplicate_runs
from ._rows import SessionRows, rows_of_run

__all__ = ["IngestResult", "ingest_tape", "normalise_tags", "write_tags"]

_BATCH: Final = 2000

_SESSION_COLS: Final = (
    "session_id, trace_id, agent_name, agent_version, task, input, input_hash, started_at, finished_at, status, "
    "tags, extra, latency_ms, case_id, repetition"
)
_SESSION_MARKS: Final = ", ".join("?" * len(_SESSION_COLS.split(", ")))
_SESSION_UPDATE: Final = ", ".join(
    f"{c} = excluded.{c}"
    for c in (
        "trace_id",
        "agent_name",
        "agent_version",
        "task",
        "input",
        "input_hash",
        "started_at",
        "finished_at",
        "status",
        "extra",
        "latency_ms",
        "case_id",
        "repetition",
    )
)
_UPSERT_SESSION: Final = (
    f"INSERT INTO agent_session ({_SESSION_COLS}) VALUES ({_SESSION_MARKS}) "
    f"ON CONFLICT (session_id) DO UPDATE SET {_SESSION_UPDATE}"
)
_INSERT_INCOMPLETE: Final = (
    f"INSERT INTO agent_session ({_SESSION_COLS}) VALUES ({_SESSION_MARKS}) ON CONFLICT (session_id) DO NOTHING"
)
_UPSERT_SPAN: Final = (
    "INSERT INTO tape_span (trace_id, span_id, session_id, kind, seq, model, input_tokens, output_tokens, otlp_json) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id, span_id) DO UPDATE SET "
    "session_id = excluded.session_id, kind = excluded.kind, seq = excluded.seq, model = excluded.model, "
    "input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, otlp_json = excluded.otlp_json "
    # The other columns are read from the line: an unchanged line is not written again (no dead rows).
    "WHERE tape_span.otlp_json <> excluded.otlp_json OR tape_span.session_id <> excluded.session_id"
)
_UPSERT_MESSAGE: Final = (
    "INSERT INTO message (msg_id, session_id, seq, role, content, tool_calls_json, created_at, step_seq) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (msg_id) DO UPDATE SET "
    "seq = excluded.seq, role = excluded.role, content = excluded.content, "
    "tool_calls_json = excluded.tool_calls_json, created_at = excluded.created_at, step_seq = excluded.step_seq"
)
_TOOL_COLS: Final = (
    "call_id",
    "session_id",
    "message_id",
    "step_id",
    "parent_step_id",
    "seq",
    "tool_name",
    "tool_version",
    "side_effect",
    "call_key",
    "arguments",
    "result_json",
    "latency_ms",
    "status",
    "error",
    "created_at",
)
_UPSERT_TOOL_CALL: Final = (
    f"INSERT INTO tool_call ({', '.join(_TOOL_COLS)}) VALUES ({', '.join('?' * len(_TOOL_COLS))}) "
    f"ON CONFLICT (call_id) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in _TOOL_COLS[2:])
)


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What one ingest read: runs (sessions), spans, messages and tool calls, each now one row in the store."""

    source: str
    sessions: int
    spans: int
    messages: int
    tool_calls: int
    warnings: tuple[str, ...] = ()


def normalise_tags(tags: Iterable[str]) -> list[str]:
    """Tags stripped, without empties and duplicates, sorted."""
    if isinstance(tags, str):
        tags = (tags,)
    return sorted({t.strip() for t in tags if isinstance(t, str) and t.strip()})


def write_tags(tx: Tx, session_ids: list[str], tags: list[str]) -> None:
    """Add tags to sessions: the ``session_tag`` rows and each session's ``tags`` JSON."""
    if not tags or not session_ids:
        return
    tx.executemany(
        "INSERT INTO session_tag (tag, session_id) VALUES (?, ?) ON CONFLICT (tag, session_id) DO NOTHING",
        [(tag, sid) for sid in session_ids for tag in tags],
    )
    updates = []
    for part in chunks(session_ids, 500):
        marks = ", ".join("?" * len(part))
        for sid, text in tx.fetchall(
            f"SELECT session_id, tags FROM agent_session WHERE session_id IN ({marks})", list(part)
        ):
            known = orjson.loads(text) if text else []
            merged = normalise_tags([*known, *tags])
            if merged != known:
                updates.append((orjson.dumps(merged).decode("utf-8"), sid))
    tx.executemany("UPDATE agent_session SET tags = ? WHERE session_id = ?", updates)


def _write(tx: Tx, all_rows: list[SessionRows]) -> None:
    complete = [r.session for r in all_rows if r.complete]
    incomplete = [r.session for r in all_rows if not r.complete]
    if complete:
        tx.executemany(_UPSERT_SESSION, complete)
    if incomplete:
        tx.executemany(_INSERT_INCOMPLETE, incomplete)
    for sql, attr in ((_UPSERT_SPAN, "spans"), (_UPSERT_MESSAGE, "messages"), (_UPSERT_TOOL_CALL, "tool_calls")):
        batch: list[tuple[object, ...]] = []
        for rows in all_rows:
            batch.extend(getattr(rows, attr))
            if len(batch) >= _BATCH:
                tx.executemany(sql, batch)
                batch = []
        if batch:
            tx.executemany(sql, batch)


def ingest_tape(backend: Backend, source: str | os.PathLike[str] | Tape, tags: Iterable[str] = ()) -> IngestResult:
    """Ingest one tape (a path, loaded with ``load_tape`` through the default redactor, since another tool
    may have written it; or a loaded ``Tape``) in one transaction."""
    tape = source if isinstance(source, Tape) else load_tape(source, redactor=DEFAULT_REDACTOR)
    tag_list = normalise_tags(tags)
    all_rows = [rows_of_run(run, tag_list, tape.path) for run in tape.runs]
    with backend.write() as tx:
        refuse_duplicate_runs(tx, all_rows, tape.path, backend.location)
        _write(tx, all_rows)
        write_tags(tx, [r.session[0] for r in all_rows], tag_list)
    return IngestResult(
        source=tape.path,
        sessions=len(all_rows),
        spans=sum(len(r.spans) for r in all_rows),
        messages=sum(len(r.messages) for r in all_rows),
        tool_calls=sum(len(r.tool_calls) for r in all_rows),
        warnings=tape.warnings,
    )
