"""Where the plugin puts a test's tape, and who may write it: classes, the ini folder, symlinks, locks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

TWO_CLASSES = """
import pytest
from otel_agent_replay import agent_run, tool

@tool(side_effect="read_only")
def lookup(who: str) -> str:
    return who.upper()

class TestA:
    def test_same(self, agent_tape):
        with agent_run("a"):
            assert lookup("a") == "A"

class TestB:
    def test_same(self, agent_tape):
        with agent_run("b"):
            assert lookup("b") == "B"
"""

ONE_TEST = """
from otel_agent_replay import agent_run, tool

@tool(side_effect="read_only")
def lookup(who: str) -> str:
    return who.upper()

def test_one(agent_tape):
    with agent_run("a"):
        assert lookup("a") == "A"
"""


def test_tests_of_two_classes_with_one_name_get_two_tapes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=TWO_CLASSES)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=2)
    folder = pytester.path / "tapes" / "test_agent"
    a, b = folder / "TestA" / "test_same.jsonl", folder / "TestB" / "test_same.jsonl"
    assert a.exists() and b.exists()
    assert a.read_bytes().count(b"\n") == 2 and b.read_bytes().count(b"\n") == 2  # one run each
    pytester.runpytest_subprocess().assert_outcomes(passed=2)  # and each replays its own


def test_a_relative_tapes_dir_in_the_ini_is_relative_to_the_ini_folder(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nagent_tapes_dir = recorded\n")
    sub = pytester.mkpydir("suite")
    (sub / "test_agent.py").write_text(ONE_TEST)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--agent-record-mode=once",
            "test_agent.py",
        ],
        cwd=sub,  # run from the sub folder: the ini file is one folder up
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (pytester.path / "recorded" / "test_agent" / "test_one.jsonl").exists()
    assert not (sub / "recorded").exists()


def test_the_default_tape_path_does_not_escape_through_a_symlinked_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=ONE_TEST)
    outside = pytester.path.parent / f"{pytester.path.name}-outside"
    outside.mkdir()
    (pytester.path / "tapes").mkdir()
    os.symlink(outside, pytester.path / "tapes" / "test_agent")
    result = pytester.runpytest_subprocess("--agent-record-mode=once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*points outside the tapes folder*symlinked folder*"])
    assert list(outside.iterdir()) == []


HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from otel_agent_replay.pytest_plugin._tapes import lock_tape
    lock = lock_tape(Path(sys.argv[1]), "test_other.py::test_writer", exclusive=True)
    print("locked", flush=True)
    time.sleep(60)
    """
)


def test_a_second_writer_of_one_tape_fails_with_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=ONE_TEST)
    tape = pytester.path / "tapes" / "test_agent" / "test_one.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tape)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = pytester.runpytest_subprocess("--agent-record-mode=once")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*cannot record the tape*in use by test_other.py::test_writer (pid*"])
        assert not tape.exists()
    finally:
        holder.kill()
        holder.wait()
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)  # free again
    assert tape.exists()


SHARED = """
import time
import pytest
from otel_agent_replay import agent_run, tool

@tool(side_effect="read_only")
def lookup(who: str) -> str:
    return who.upper()

@pytest.mark.agent_tape("shared.jsonl")
def test_first(agent_tape):
    with agent_run("a"):
        lookup("a")
    time.sleep(3)

@pytest.mark.agent_tape("shared.jsonl")
def test_second(agent_tape):
    with agent_run("a"):
        lookup("b")
    time.sleep(3)
"""


def test_two_xdist_workers_recording_one_tape_are_detected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=SHARED)
    result = pytester.runpytest_subprocess("-n", "2", "--agent-record-mode=all")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*cannot record the tape*shared.jsonl*in use by test_agent.py::test_*"])
