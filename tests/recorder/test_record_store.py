"""record(..., store=...): each run is ingested into the store as it finishes; a failing store never fails the agent."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay import RecordingWarning, agent_run, load_tape, record, tool
from otel_agent_replay.store import open_store


@tool(side_effect="read_only")
def lookup(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "shipped"}


def agent(order_id: str) -> str:
    with agent_run("orders", agent_version="1.0", input={"order_id": order_id}) as run:
        found = lookup(order_id)
        run.set_output(found["status"])
        return run.run_id


def test_each_run_is_in_the_store_as_soon_as_it_finishes(store_location: str, tmp_path: Path) -> None:
    tape = tmp_path / "orders.jsonl"
    with open_store(store_location) as store, record(tape, store=store) as rec:
        assert rec.store is store
        first = agent("o-1")
        assert [s.session_id for s in store.sessions()] == [first]  # before the recording ends
        assert [c.tool_name for c in store.tool_calls(first)] == ["lookup"]
        second = agent("o-2")
        assert {s.session_id for s in store.sessions()} == {first, second}
        assert store.session(second).status == "success"
        assert store.session(second).agent_version == "1.0"
        before = store.counts()
    with open_store(store_location) as store:
        assert store.counts() == before, "closing the recording adds nothing: every run was in already"
        store.ingest(tape)  # the tape and the live ingest are the same rows
        assert store.counts() == before
    assert len(load_tape(tape).runs) == 2


def test_a_store_given_by_location_is_opened_and_closed_by_the_recording(store_location: str, tmp_path: Path) -> None:
    tape = tmp_path / "orders.jsonl"
    with record(tape, store=store_location):
        run_id = agent("o-1")
    with open_store(store_location) as store:
        assert store.session(run_id).status == "success"


def test_a_run_still_open_when_the_recording_ends_is_stored_as_aborted(tmp_path: Path) -> None:
    db = tmp_path / "evidence.db"
    run = agent_run("orders", agent_version="1.0")
    rec = record(tmp_path / "t.jsonl", store=db)
    rec.__enter__()
    handle = run.__enter__()
    lookup("o-3")
    rec.__exit__(None, None, None)  # the recording ends while the run is still open
    run.__exit__(None, None, None)
    with open_store(db) as store:
        assert store.session(handle.run_id).status == "aborted"
        assert [c.tool_name for c in store.tool_calls(handle.run_id)] == ["lookup"]


def test_a_store_that_cannot_be_opened_warns_and_the_tape_keeps_the_run(tmp_path: Path) -> None:
    tape = tmp_path / "orders.jsonl"
    warned = pytest.warns(RecordingWarning, match="could not be opened.*otel-agent-replay ingest")
    with warned, record(tape, store="mysql://nowhere/db"):
        agent("o-1")
    assert len(load_tape(tape).runs) == 1


def test_a_store_that_fails_mid_recording_warns_and_never_raises_into_the_agent(tmp_path: Path) -> None:
    db = tmp_path / "evidence.db"
    tape = tmp_path / "orders.jsonl"
    with open_store(db) as store, record(tape, store=store):
        conn = sqlite3.connect(db)
        conn.execute(
            "CREATE TRIGGER no_sessions BEFORE INSERT ON agent_session BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
        )
        conn.commit()
        conn.close()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run_id = agent("o-1")  # returns normally
        assert any(issubclass(w.category, RecordingWarning) and run_id in str(w.message) for w in caught)
        assert "disk says no" in str(caught[-1].message)
        assert store.sessions() == []
    assert [r.run_id for r in load_tape(tape).runs] == [run_id]


@pytest.mark.parametrize("given", ["an-open-store", "a-path"])
def test_a_locked_store_never_holds_the_agent_and_its_rows_arrive_later_or_are_reported(
    tmp_path: Path, given: str
) -> None:
    import subprocess
    import sys
    import time

    db = tmp_path / "evidence.db"
    opened = open_store(db)  # created and migrated before another process locks it
    if given == "a-path":
        opened.close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "conn.execute('BEGIN EXCLUSIVE')\n"
            "print('held', flush=True)\n"
            "sys.stdin.readline()\n"
            "conn.execute('COMMIT')\n",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    run_ids: list[str] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        tape = tmp_path / "orders.jsonl"
        store_option: Any = opened if given == "an-open-store" else db
        with warnings.catch_warnings(record=True) as caught, record(tape, store=store_option):
            warnings.simplefilter("always")
            for i in range(10):
                run_ids.append(agent(f"o-{i}"))  # each run ends while another process holds the store
        # The holder lets go only when told (below): every run ended, and so did the recording, while the
        # store was locked, so neither waited for it.
        assert holder.poll() is None, "the store was still locked when the recording ended"
        reported = [str(w.message) for w in caught if issubclass(w.category, RecordingWarning)]
        # What was not stored by the end of the recording is reported, by id, with the command to ingest it.
        (warning,) = [m for m in reported if "not yet stored" in m]
        assert "10 run(s)" in warning and all(run_id in warning for run_id in run_ids)
        assert f"otel-agent-replay ingest {tape} --db {db}" in warning
    finally:
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()  # type: ignore[union-attr]
    time.sleep(0.5)
    if given == "an-open-store":
        opened.close()  # the store the application gave stays the application's to close
    deadline = time.monotonic() + 30
    while True:  # once the lock is gone, the rows arrive
        with open_store(db) as store:
            stored = {s.session_id for s in store.sessions()}
        if stored >= set(run_ids) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert stored == set(run_ids)
    assert len(load_tape(tape).runs) == 10
