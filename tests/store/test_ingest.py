"""Ingest: tapes → the four tables, idempotent, safe for several processes, atomic per tape."""

from __future__ import annotations

import hashlib
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.store_agents import AGENT, record_support
from helpers.store_sql import raw

from otel_agent_replay import StoreError, TapeFormatError, load_tape
from otel_agent_replay.cli._demo import record_demo
from otel_agent_replay.store import OUT_OF_BOUNDS, open_store

CHILD = Path(__file__).parents[1] / "helpers" / "store_ingest_child.py"
TABLES = ("agent_session", "message", "tool_call", "eval_record", "session_tag", "tape_span")
_ID32 = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")


def dump(location: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted: what "the same store" means."""
    return {t: sorted(map(tuple, raw(location, f"SELECT * FROM {t}")), key=repr) for t in TABLES}


def variant(tape: Path, salt: str, out: Path) -> Path:
    """A copy of a tape with every run and trace id replaced: the same behaviour, other sessions."""
    text = tape.read_text(encoding="utf-8")
    out.write_text(
        _ID32.sub(lambda m: hashlib.sha256((salt + m.group(0)).encode()).hexdigest()[:32], text), encoding="utf-8"
    )
    return out


def test_demo_tape_fills_the_four_tables(store_location: str, tmp_path: Path) -> None:
    demo = record_demo(tmp_path / "demo")
    support = record_support(tmp_path / "support.jsonl", "1.0", ["c1"])
    with open_store(store_location) as store:
        first = store.ingest(demo.tape, tags=["demo"])
        assert (first.sessions, first.spans, first.tool_calls, first.messages) == (1, 5, 3, 0)
        store.ingest(support)
        session = store.session(demo.run_id)
        assert (session.agent_name, session.agent_version, session.task) == ("report-writer", "1.0", "summarise doc-7")
        assert session.status == "success" and session.input == '{"doc_id":"doc-7"}'
        assert session.tags == ("demo",) and session.extra["output"] == demo.output
        assert session.started_at <= session.finished_at  # type: ignore[operator]
        (run,) = load_tape(demo.tape).runs
        assert session.trace_id == run.trace_id and session.input_hash == run.attributes["agent_replay.input_hash"]
        calls = store.tool_calls(demo.run_id)
        assert [(c.seq, c.tool_name, c.side_effect, c.status) for c in calls] == [
            (1, "fetch_document", "read_only", "ok"),
            (2, "search_index", "read_only", "ok"),
            (4, "write_report", "write", "ok"),
        ]
        tool_steps = [s for s in run.steps if s.kind == "tool"]
        assert [c.call_key for c in calls] == [s.call_key for s in tool_steps]
        assert [c.arguments for c in calls] == [s.args_json for s in tool_steps]
        assert [c.result_json for c in calls] == [s.result_json for s in tool_steps]
        assert all(c.call_id == f"{demo.run_id}:{c.seq}" and c.latency_ms and c.latency_ms > 0 for c in calls)
        assert calls[2].parent_step_id == "summarise#1" and calls[2].message_id is None  # the demo sends no messages

        (chat_session,) = store.sessions(agent_name=AGENT)
        messages = store.messages(chat_session.session_id)
        assert [(m.seq, m.role, m.content, m.step_seq) for m in messages] == [
            (1, "system", "You answer billing questions.", 1),
            (2, "user", "What does c1 owe?", 1),
            (3, "assistant", "Let me look at the account.", 1),
            (4, "tool", "42", 3),
            (5, "assistant", "You owe 42.", 3),
        ]
        assert messages[2].tool_calls_json is not None and "fetch_account" in messages[2].tool_calls_json
        (lookup,) = store.tool_calls(chat_session.session_id)
        assert lookup.message_id == messages[2].msg_id  # the answer that asked for the call
        store.add_eval(chat_session.session_id, "answered", passed=True, judge_model="rule", criteria_version="1")
        counts = store.counts()
    assert {t: counts[t] for t in TABLES[:4]} == {"agent_session": 2, "message": 5, "tool_call": 4, "eval_record": 1}
    assert counts["tape_span"] == 5 + 4 and counts["session_tag"] == 1


def test_ingesting_again_adds_nothing(store_location: str, tmp_path: Path) -> None:
    tape = record_support(tmp_path / "support.jsonl", "1.1", ["c1", "c2", "bad3"])
    with open_store(store_location) as store:
        store.ingest(tape, tags=["billing"])
        before = dump(store_location)
        store.ingest(tape, tags=["billing"])
        store.ingest(load_tape(tape), tags=["billing"])  # a loaded Tape too
        assert dump(store_location) == before
        assert store.counts()["agent_session"] == 3
        store.ingest(tape, tags=["nightly"])  # a new tag is added, nothing else changes
        assert {s.tags for s in store.sessions()} == {("billing", "nightly")}
        assert len(store.sessions(tag="nightly")) == 3
        after = dump(store_location)
    for table in ("message", "tool_call", "tape_span", "eval_record"):
        assert after[table] == before[table]


def test_outcomes_of_runs_and_tool_calls(store_location: str, tmp_path: Path) -> None:
    tape = record_support(tmp_path / "support.jsonl", "1.1", ["c1", "bad2"])
    with open_store(store_location) as store:
        store.ingest(tape)
        by_input = {s.input: s for s in store.sessions()}
        ok, failed = by_input['{"customer_id":"c1"}'], by_input['{"customer_id":"bad2"}']
        assert (ok.status, failed.status) == ("success", "failed")
        assert failed.extra["error"] == {"type": "helpers.store_agents.BillingError", "message": "no account bad2"}
        calls = [(c.tool_name, c.status, c.error) for c in store.tool_calls(ok.session_id)]
        assert calls == [
            ("issue_refund", "error", OUT_OF_BOUNDS),
            ("fetch_account", "timeout", "TimeoutError: billing API timed out for c1"),
            ("fetch_account", "ok", None),
        ]
        assert store.tool_calls(failed.session_id)[-1].error == "BillingError: no account bad2"


def test_a_run_without_its_run_span_is_aborted_until_the_span_arrives(store_location: str, tmp_path: Path) -> None:
    tape = record_support(tmp_path / "full.jsonl", "1.0", ["c1"])
    lines = tape.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(line for line in lines if '"invoke_agent"' not in line), encoding="utf-8")
    with open_store(store_location) as store:
        store.ingest(cut)
        (session,) = store.sessions()
        assert (session.status, session.finished_at, session.agent_name) == ("aborted", None, "")
        assert len(store.tool_calls(session.session_id)) == 1
        store.ingest(tape)
        (session,) = store.sessions()
        assert (session.status, session.agent_name) == ("success", AGENT)
        store.ingest(cut)  # the partial view never overwrites the complete one
        assert store.session(session.session_id).status == "success"
        assert store.counts()["tape_span"] == 4


def _same_run_id(source: Path, run_id: str, out: Path) -> Path:
    """A copy of a one-run tape whose run carries ``run_id`` instead of its own."""
    (run,) = load_tape(source).runs
    out.write_text(source.read_text(encoding="utf-8").replace(run.run_id, run_id), encoding="utf-8")
    return out


@pytest.mark.parametrize("how", ["another-recording", "edited-copy"])
def test_a_different_run_under_a_stored_run_id_is_refused_naming_both_tapes(
    store_location: str, tmp_path: Path, how: str
) -> None:
    first = record_support(tmp_path / "first.jsonl", "1.0", ["c1"])
    (run,) = load_tape(first).runs
    if how == "another-recording":  # an application that gave two runs one run id
        second = _same_run_id(record_support(tmp_path / "other.jsonl", "1.0", ["c2"]), run.run_id, tmp_path / "b.jsonl")
    else:  # the same ids, a recorded answer changed
        second = tmp_path / "b.jsonl"
        text = first.read_text(encoding="utf-8")
        assert text.count("You owe 42.") >= 1
        second.write_text(text.replace("You owe 42.", "You owe 0."), encoding="utf-8")
    with open_store(store_location) as store:
        store.ingest(first)
        before = dump(store_location)
        with pytest.raises(StoreError) as refused:
            store.ingest(second)
        assert dump(store_location) == before  # neither merged nor replaced: nothing of it was written
        message = str(refused.value)
        assert run.run_id in message and str(first) in message and str(second) in message
        assert message.rstrip().endswith("delete that session first (Store.delete_session)")
        store.ingest(first)  # the same run again is still one row of each
        assert dump(store_location) == before


def test_a_malformed_tape_is_refused_before_anything_is_written(store_location: str, tmp_path: Path) -> None:
    tape = record_support(tmp_path / "support.jsonl", "1.0", ["c1", "c2"])
    broken = tmp_path / "broken.jsonl"
    lines = tape.read_text(encoding="utf-8").splitlines(keepends=True)
    broken.write_text("".join(lines[:2]) + "{not json\n" + "".join(lines[2:]), encoding="utf-8")
    with open_store(store_location) as store:
        with pytest.raises(TapeFormatError, match=r"broken\.jsonl:3"):
            store.ingest(broken)
        assert store.counts()["agent_session"] == 0


def test_four_processes_ingesting_into_one_store_lose_nothing(store_location: str, tmp_path: Path) -> None:
    tapes = [
        record_support(tmp_path / f"p{p}-t{t}.jsonl", "1.0", [f"p{p}t{t}c{c}" for c in range(15)])
        for p in range(4)
        for t in range(3)
    ]
    open_store(store_location).close()
    start = time.time() + 1.5
    children = [
        subprocess.Popen(
            [sys.executable, str(CHILD), store_location, "--at", str(start), *map(str, tapes[p * 3 : p * 3 + 3])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for p in range(4)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
        assert out.decode().count("ingested ") == 3
    with open_store(store_location) as store:
        counts = store.counts()
        assert counts["agent_session"] == 4 * 3 * 15
        assert counts["tool_call"] == 180 and counts["message"] == 180 * 5 and counts["tape_span"] == 180 * 4
        assert {s.status for s in store.sessions()} == {"success"}
    if not store_location.startswith("postgresql://"):
        assert raw(store_location, "PRAGMA integrity_check") == [("ok",)]


def _in_write_transaction(location: str, child_pid: int) -> bool:
    """Whether the ingesting child holds an open write transaction right now."""
    if location.startswith("postgresql://"):
        rows = raw(
            location,
            "SELECT 1 FROM pg_stat_activity WHERE application_name = 'killed-ingest' AND backend_xid IS NOT NULL",
        )
        return bool(rows)
    conn = sqlite3.connect(location, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as err:
        return "locked" in str(err)
    else:
        conn.execute("ROLLBACK")
        return False
    finally:
        conn.close()


def test_a_killed_ingest_leaves_the_store_consistent(store_location: str, tmp_path: Path) -> None:
    per_tape = 300
    source = record_support(tmp_path / "source.jsonl", "1.0", [f"c{i}" for i in range(per_tape)])
    tapes = [variant(source, f"v{i}", tmp_path / f"v{i}.jsonl") for i in range(12)]
    url = store_location + "?application_name=killed-ingest" if "://" in store_location else store_location
    open_store(store_location).close()
    child = subprocess.Popen(
        [sys.executable, str(CHILD), url, *map(str, tapes)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline().decode()
        assert first.startswith("ingested "), child.stderr.read().decode() if child.stderr else ""
        deadline = time.monotonic() + 60
        while not _in_write_transaction(store_location, child.pid):
            assert child.poll() is None, "the child finished before it could be killed mid-transaction"
            if time.monotonic() > deadline:
                raise TimeoutError("the child never held a write transaction within 60 s")
            time.sleep(0.001)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    if store_location.startswith("postgresql://"):  # the server ends the dead client's transaction
        deadline = time.monotonic() + 30
        while _in_write_transaction(store_location, child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    with open_store(store_location) as store:
        counts = store.counts()
        committed = counts["agent_session"] // per_tape
        assert 1 <= committed < len(tapes)
        # Whole tapes or nothing: every stored session has all its rows.
        assert counts["agent_session"] == committed * per_tape
        assert (counts["tool_call"], counts["message"], counts["tape_span"]) == (
            committed * per_tape,
            committed * per_tape * 5,
            committed * per_tape * 4,
        )
        if not store_location.startswith("postgresql://"):
            assert raw(store_location, "PRAGMA integrity_check") == [("ok",)]
        for tape in tapes:  # and it takes the rest as if nothing had happened
            store.ingest(tape)
        assert store.counts()["agent_session"] == len(tapes) * per_tape
        assert store.counts()["tape_span"] == len(tapes) * per_tape * 4
