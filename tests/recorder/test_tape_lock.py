"""The tape's one-writer lock: held by a real process, named, released on every way out, taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_agent_replay import TapeError, TapeWarning, agent_run, record, replay, tool
from otel_agent_replay.core import TapeLock, lock_path

WRITERS = Path(__file__).resolve().parent.parent / "helpers" / "tape_writers.py"


@pytest.fixture
def holder(tape: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process inside ``record(tape)``, until the test ends (or kills it)."""
    proc = subprocess.Popen([sys.executable, str(WRITERS), "hold", str(tape)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "holding"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()


@tool(side_effect="read_only")
def look(q: str) -> str:
    return q


def test_the_lock_file_names_its_holder(tape: Path, holder: subprocess.Popen[str]) -> None:
    named = json.loads(lock_path(tape).read_text(encoding="utf-8"))
    assert named["pid"] == holder.pid and "tape_writers.py hold" in named["command"] and named["host"]


def test_a_second_record_waits_then_fails_naming_the_holder(tape: Path, holder: subprocess.Popen[str]) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(TapeError) as failed, record(tape, lock_timeout=0.3):
            pytest.fail("the block ran while another process recorded the tape")
    waits = [w for w in seen if issubclass(w.category, TapeWarning)]
    assert len(waits) == 1  # said once, however long it waits
    assert f"is being written by pid {holder.pid} on " in str(waits[0].message)
    assert "record() waits for it to finish (at most 0.3s)" in str(waits[0].message)
    message = str(failed.value)
    assert message.startswith(f"{tape}: pid {holder.pid} on ") and "still writes it after 0.3s" in message
    assert "record(..., lock_timeout=SECONDS)" in message and "PYTEST_XDIST_WORKER" in message
    assert lock_path(tape).exists() and not TapeLock(tape).held()


@pytest.mark.parametrize(
    ("mode", "advice"),
    [
        ("once", "When it has finished, run again: replay(..., mode='once') then replays the tape it recorded"),
        ("new_episodes", "Appends to one tape are made one after the other"),
        ("all", "give each process a tape of its own"),
    ],
)
def test_a_writing_replay_fails_with_its_modes_advice(
    tape: Path, holder: subprocess.Popen[str], mode: str, advice: str
) -> None:
    with (
        pytest.warns(TapeWarning, match=rf"replay \(mode='{mode}'\) waits for it"),
        pytest.raises(TapeError, match=rf"pid {holder.pid} on .*still writes it after 0\.2s") as failed,
        replay(tape, mode=mode, lock_timeout=0.2),  # type: ignore[arg-type]
    ):
        pytest.fail("the block ran while another process recorded the tape")
    assert advice in str(failed.value) and "replay(..., lock_timeout=SECONDS)" in str(failed.value)


def test_a_killed_holders_lock_is_taken_over_at_once(tape: Path, holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert json.loads(lock_path(tape).read_text(encoding="utf-8"))["pid"] == holder.pid  # left behind
    with warnings.catch_warnings():
        warnings.simplefilter("error", TapeWarning)  # no wait: the kernel released the dead process's lock
        lock = TapeLock(tape)
        lock.acquire(0, waiting=lambda _: pytest.fail("waited for a dead process"), busy=str)
    try:
        assert lock.taken_over is not None and lock.taken_over.pid == holder.pid
        assert lock.taken_over.alive() is False
        assert json.loads(lock_path(tape).read_text(encoding="utf-8"))["pid"] == os.getpid()
    finally:
        lock.release()
    assert not lock_path(tape).exists()


class _Stop(Exception):
    pass


@pytest.mark.parametrize("error", [_Stop, KeyboardInterrupt])
def test_the_lock_is_released_when_the_block_ends_by_an_exception(tape: Path, error: type[BaseException]) -> None:
    with pytest.raises(error), record(tape), agent_run("a"):
        look("x")
        assert TapeLock(tape).held() and lock_path(tape).exists()
        raise error()
    assert not TapeLock(tape).held() and not lock_path(tape).exists()
    with pytest.raises(error), replay(tape, mode="new_episodes"), agent_run("a"):
        assert TapeLock(tape).held()
        raise error()
    assert not TapeLock(tape).held() and not lock_path(tape).exists()
    # Another process takes it at once.
    code = (
        "import sys; from otel_agent_replay.core import TapeLock; "
        "TapeLock(sys.argv[1]).acquire(0, waiting=print, busy=str)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tape)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "", done.stderr


def test_a_strict_replay_and_a_once_of_a_recorded_tape_take_no_lock(tape: Path) -> None:
    with record(tape), agent_run("a"):
        look("x")
    folder = sorted(os.listdir(tape.parent))
    for mode in ("none", "once"):
        with replay(tape, mode=mode), agent_run("a"):  # type: ignore[arg-type]
            look("x")
            assert not TapeLock(tape).held()
        assert sorted(os.listdir(tape.parent)) == folder


def test_nested_writers_in_one_process_share_the_lock(tape: Path) -> None:
    with replay(tape, mode="once"), agent_run("a"):  # records through record(): the lock is taken once
        look("x")
        with record(tape.with_name("other.jsonl")):
            assert TapeLock(tape).held() and TapeLock(tape.with_name("other.jsonl")).held()
    assert not TapeLock(tape).held() and not lock_path(tape).exists()
    assert [s.tool for s in load_steps(tape)] == ["look"]


def load_steps(tape: Path) -> list[object]:
    from otel_agent_replay import load_tape

    (run,) = load_tape(tape).runs
    return list(run.steps)
