"""Side effects fail closed outside the replay's context: stray threads and tasks, a changed
declaration in new_episodes, a replay never exited."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay import (
    ReplaySession,
    ReplayWarning,
    SideEffectRefused,
    agent_run,
    load_tape,
    record,
    replay,
    tool,
)

RAN: list[str] = []  # what really ran


@tool(side_effect="write")
def charge(account: str, cents: int) -> str:
    RAN.append(f"charge:{account}")
    return "charged"


@tool(side_effect="read_only")
def balance(account: str) -> int:
    RAN.append(f"balance:{account}")
    return 100


def agent() -> int:
    found = balance("acct-1")
    charge("acct-1", 500)
    return found


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    RAN.clear()
    yield


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "billing.jsonl"
    with record(path), agent_run("billing"):
        agent()
    RAN.clear()
    return path


def _stray(target: Callable[[], Any]) -> list[BaseException]:
    """Run ``target`` in a thread started without a copy of the context; return what it raised."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return errors


def _assert_refused(session: ReplaySession, errors: list[BaseException], calls: int = 1) -> None:
    assert "charge:acct-9" not in RAN, "the write tool's real body ran during a replay"
    assert errors and isinstance(errors[0], SideEffectRefused)
    message = str(errors[0])
    assert "contextvars.copy_context()" in message and "ctx.run" in message and "charge" in message
    stats = session.stats
    assert stats["outside_calls"] == calls and stats["real_side_effects"] == 0
    assert stats["refused_side_effects"] == calls and stats["stubbed_side_effects"] == 1
    assert any(d.kind == "refused" and d.tool == "charge" and "copy_context" in d.message for d in session.report)


def _replayed(tape: Path, inside: Callable[[], list[BaseException]]) -> tuple[ReplaySession, list[BaseException]]:
    """Replay the agent (its write stubbed); ``inside`` makes the stray call. The replay must fail at its end."""
    errors: list[BaseException] = []
    refused = pytest.raises(SideEffectRefused, match="does not carry the replay's context")
    with refused, replay(tape, stub=("charge",)) as session, agent_run("billing"):
        agent()
        errors.extend(inside())
    return session, errors


def test_a_thread_started_inside_the_block_without_the_context_is_refused(tape: Path) -> None:
    def worker() -> None:
        with agent_run("worker"):
            charge("acct-9", 1)

    session, errors = _replayed(tape, lambda: _stray(worker))
    _assert_refused(session, errors)


def test_a_thread_with_no_agent_run_is_refused(tape: Path) -> None:
    session, errors = _replayed(tape, lambda: _stray(lambda: charge("acct-9", 1)))
    _assert_refused(session, errors)


def test_thread_pool_submit_inside_the_block_is_refused(tape: Path) -> None:
    def inside() -> list[BaseException]:
        with ThreadPoolExecutor(2) as pool:
            future = pool.submit(charge, "acct-9", 1)
            error = future.exception()
        return [error] if error is not None else []

    session, errors = _replayed(tape, inside)
    _assert_refused(session, errors)


def test_run_in_executor_inside_the_block_is_refused(tape: Path) -> None:
    async def main() -> list[BaseException]:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, charge, "acct-9", 1)
        except SideEffectRefused as exc:
            return [exc]
        return []

    session, errors = _replayed(tape, lambda: asyncio.run(main()))
    _assert_refused(session, errors)


def test_a_thread_created_before_the_block_is_refused(tape: Path) -> None:
    go, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def waiting() -> None:
        go.wait(10)
        try:
            charge("acct-9", 1)
        except BaseException as exc:
            errors.append(exc)
        done.set()

    thread = threading.Thread(target=contextvars.copy_context().run, args=(waiting,))
    thread.start()  # its context was copied before the replay began: it carries no replay

    def inside() -> list[BaseException]:
        go.set()
        done.wait(10)
        return errors

    session, seen = _replayed(tape, inside)
    thread.join()
    _assert_refused(session, seen)


def test_an_asyncio_task_created_before_the_block_is_refused(tape: Path) -> None:
    async def main() -> tuple[ReplaySession, list[BaseException]]:
        go = asyncio.Event()
        errors: list[BaseException] = []

        async def waiting() -> None:
            await go.wait()
            try:
                charge("acct-9", 1)
            except BaseException as exc:
                errors.append(exc)

        task = asyncio.create_task(waiting())  # copies the context now, before the replay
        await asyncio.sleep(0)
        with pytest.raises(SideEffectRefused), replay(tape, stub=("charge",)) as session, agent_run("billing"):
            agent()
            go.set()
            await task
        return session, errors

    session, errors = asyncio.run(main())
    _assert_refused(session, errors)


def test_a_copied_context_is_served_by_the_replay(tape: Path) -> None:
    with replay(tape, stub=("charge",)) as session, agent_run("billing"):
        ctx = contextvars.copy_context()
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(ctx.run, agent).result() == 100
    assert RAN == [] and session.stats["outside_calls"] == 0 and session.stats["tape_hits"] == 2


def test_read_only_tools_run_outside_only_when_allowed(tape: Path) -> None:
    with pytest.raises(SideEffectRefused), replay(tape, stub=("charge",)) as session, agent_run("billing"):
        agent()
        refused = _stray(lambda: balance("acct-9"))
    # the default refuses read-only tools too, and says how to allow them
    assert isinstance(refused[0], SideEffectRefused) and "outside_calls='read_only'" in str(refused[0])
    assert "balance:acct-9" not in RAN
    assert session.stats["outside_calls"] == 1
    del session

    RAN.clear()
    allowed = replay(tape, stub=("charge",), outside_calls="read_only")
    with pytest.raises(SideEffectRefused), allowed as session, agent_run("billing"):
        agent()
        assert _stray(lambda: balance("acct-9")) == []
        writes = _stray(lambda: charge("acct-9", 1))
    assert RAN == ["balance:acct-9"]
    assert isinstance(writes[0], SideEffectRefused) and "outside_calls" not in str(writes[0])
    assert session.stats["outside_calls"] == 2 and session.stats["live_tool_calls"] == 1


def test_the_guard_ends_with_the_replay(tape: Path) -> None:
    with replay(tape, stub=("charge",)), agent_run("billing"):
        agent()
    assert _stray(lambda: charge("acct-9", 1)) == []
    assert RAN == ["charge:acct-9"]


def test_new_episodes_keeps_the_recorded_declaration(tmp_path: Path) -> None:
    path = tmp_path / "lookup.jsonl"

    @tool(name="lookup", side_effect="write")
    def lookup_then(key: str) -> str:
        return f"old:{key}"

    with record(path), agent_run("a"):
        lookup_then("k1")

    @tool(name="lookup", side_effect="read_only")
    def lookup_now(key: str) -> str:
        RAN.append(f"lookup:{key}")
        return f"new:{key}"

    warned = pytest.warns(ReplayWarning, match=r"side_effect='write'.*side_effect='read_only'")
    refused = pytest.raises(SideEffectRefused, match="recorded declaration wins")
    with warned, refused, replay(path, mode="new_episodes"), agent_run("a"):
        assert lookup_now("k1") == "old:k1"  # a hit is served from the tape
        lookup_now("k2")
    assert RAN == []
    assert len(load_tape(path).runs[0].steps) == 1

    with replay(path, mode="new_episodes", declare={"lookup": "read_only"}), agent_run("a"):
        assert lookup_now("k1") == "old:k1"
        assert lookup_now("k2") == "new:k2"
    assert RAN == ["lookup:k2"]
    assert len(load_tape(path).runs[0].steps) == 2


def test_a_replay_never_exited_is_warned_about_at_the_next_record_and_replay(tape: Path, tmp_path: Path) -> None:
    leaked = replay(tape, allow_unused=True)
    leaked.__enter__()
    try:
        warned = pytest.warns(ReplayWarning, match=r"still active.*billing\.jsonl.*entered at .*test_outside_calls\.py")
        with warned, record(tmp_path / "other.jsonl"):
            pass
        with pytest.warns(ReplayWarning, match="never exited"), replay(tape, allow_unused=True):
            pass
    finally:
        leaked.__exit__(None, None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with record(tmp_path / "other.jsonl"):  # no warning once it has ended
            pass


def test_a_replay_never_exited_is_warned_about_at_exit(tape: Path) -> None:
    script = textwrap.dedent(
        f"""
        from otel_agent_replay import replay
        replay({str(tape)!r}, allow_unused=True).__enter__()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "ReplayWarning" in done.stderr and "never exited" in done.stderr and "billing.jsonl" in done.stderr
