"""The evidence store itself: opening, the schema other tools read, migrations, evaluations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from helpers.pg_server import PgServer
from helpers.store_agents import record_support
from helpers.store_sql import raw

from otel_agent_replay import ConfigurationError
from otel_agent_replay.store import LATEST_VERSION, Evaluation, StoreError, open_store

CONTRACT = {
    "agent_session": [
        "session_id", "trace_id", "agent_name", "agent_version", "task", "input", "input_hash", "started_at",
        "finished_at", "status", "tags", "extra",
    ],
    "message": ["msg_id", "session_id", "seq", "role", "content", "tool_calls_json", "created_at"],
    "tool_call": [
        "call_id", "session_id", "message_id", "step_id", "parent_step_id", "seq", "tool_name", "tool_version",
        "side_effect", "call_key", "arguments", "result_json", "latency_ms", "status", "error", "created_at",
    ],
    "eval_record": [
        "eval_id", "session_id", "tool_call_id", "case_group", "metric", "score", "pass", "judge_model",
        "criteria_version", "created_at",
    ],
}  # fmt: skip
ADDED = {
    "agent_session": ["latency_ms", "case_id", "repetition"],
    "message": ["step_seq"],
    "tool_call": [],
    "eval_record": ["explanation"],
}


def columns(location: str, table: str) -> list[str]:
    if location.startswith("postgresql://"):
        rows = raw(
            location,
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
            (table,),
        )
        return [r[0] for r in rows]
    return [r[1] for r in raw(location, f"PRAGMA table_info({table})")]


def test_the_four_contract_tables_have_the_contract_columns(store_location: str) -> None:
    open_store(store_location).close()
    for table, names in CONTRACT.items():
        assert columns(store_location, table) == names + ADDED[table], table


def test_foreign_keys_refuse_rows_of_unknown_sessions(store_location: str) -> None:
    open_store(store_location).close()
    mark = "%s" if store_location.startswith("postgresql://") else "?"
    errors = (sqlite3.IntegrityError, psycopg.errors.ForeignKeyViolation)
    with pytest.raises(errors):
        raw(
            store_location,
            f"INSERT INTO message (msg_id, session_id, seq, role, created_at, step_seq) "
            f"VALUES ({mark}, {mark}, 1, 'user', 0, 1)",
            ("m1", "no-such-session"),
        )
    with pytest.raises(errors):
        raw(
            store_location,
            f"INSERT INTO eval_record (eval_id, session_id, metric, created_at) VALUES ({mark}, {mark}, 'm', 0)",
            ("e1", "no-such-session"),
        )


def test_sqlite_store_is_wal_with_a_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "evidence.db"
    with open_store(path) as store:
        assert store.dialect == "sqlite"
        assert store._backend._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1  # type: ignore[attr-defined]
        assert store._backend._conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000  # type: ignore[attr-defined]
    assert raw(str(path), "PRAGMA journal_mode")[0][0] == "wal"
    with open_store(f"sqlite:///{path}") as again:
        assert again.location == str(path)


def test_schema_version_is_recorded_once_and_a_newer_store_is_refused(store_location: str) -> None:
    with open_store(store_location) as store:
        assert store.schema_version == LATEST_VERSION
    with open_store(store_location) as store:  # reopening applies nothing again
        assert store.schema_version == LATEST_VERSION
    applied = [r[0] for r in raw(store_location, "SELECT version FROM schema_version ORDER BY version")]
    assert applied == list(range(1, LATEST_VERSION + 1))
    mark = "%s" if store_location.startswith("postgresql://") else "?"
    raw(
        store_location,
        f"INSERT INTO schema_version (version, applied_at, description) VALUES ({mark}, 0, 'from the future')",
        (LATEST_VERSION + 1,),
    )
    with pytest.raises(ConfigurationError, match=rf"schema version {LATEST_VERSION + 1}.*upgrade otel-agent-replay"):
        open_store(store_location)


def test_a_bad_location_says_what_to_give(tmp_path: Path, pg_server: PgServer) -> None:
    with pytest.raises(ConfigurationError, match="unknown scheme 'mysql'"):
        open_store("mysql://root@localhost/db")
    with pytest.raises(ConfigurationError, match="empty path"):
        open_store("  ")
    secret = f"postgresql://postgres:hunter2@127.0.0.1:{pg_server.port}/no_such_db"
    with pytest.raises(StoreError, match="no_such_db") as err:
        open_store(secret)
    assert "hunter2" not in str(err.value) and "***" in str(err.value)


def test_evaluations_round_trip_and_one_judgement_is_one_row(store_location: str, tmp_path: Path) -> None:
    tape = record_support(tmp_path / "v1.jsonl", "1.0", ["c1"])
    with open_store(store_location) as store:
        store.ingest(tape)
        (session,) = store.sessions()
        call = store.tool_calls(session.session_id)[0]
        first = store.add_eval(
            session.session_id, "helpful", score=0.5, passed=False, judge_model="judge-1", criteria_version="v1"
        )
        again = store.add_eval(
            session.session_id, "helpful", score=0.9, passed=True, judge_model="judge-1", criteria_version="v1",
            explanation="answers the question",
        )  # fmt: skip
        assert again == first  # the same judgement under the same criteria replaces the row
        store.add_evals(
            session.session_id,
            [
                Evaluation("helpful", 0.2, False, "judge-1", "v2"),
                Evaluation("tool_success", 1.0, True, None, "rules-1", tool_call_id=call.call_id, case_group="billing"),
            ],
        )
        rows = store.evals(session.session_id)
        assert len(rows) == 3
        by_key = {(r.metric, r.criteria_version): r for r in rows}
        assert by_key["helpful", "v1"].score == 0.9 and by_key["helpful", "v1"].passed is True
        assert by_key["helpful", "v1"].explanation == "answers the question"
        assert by_key["helpful", "v2"].passed is False
        assert by_key["tool_success", "rules-1"].tool_call_id == call.call_id
        assert by_key["tool_success", "rules-1"].case_group == "billing"
        with pytest.raises(ConfigurationError, match="no session 'nope'"):
            store.add_eval("nope", "helpful", passed=True)
        with pytest.raises(ConfigurationError, match="not a finite number"):
            store.add_eval(session.session_id, "helpful", score=float("nan"))
        with pytest.raises(ConfigurationError, match="no tool call 'x:9'"):
            store.add_eval(session.session_id, "helpful", passed=True, tool_call_id="x:9")
        assert store.counts()["eval_record"] == 3  # the refused ones wrote nothing
