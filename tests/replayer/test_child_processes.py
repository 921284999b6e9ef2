"""Processes started from a replay's context: counted in ``child_processes`` and warned once; every way of
starting one (``spawnv_passfds`` included) gives it the replay's proxy, and a Python one joins the replay."""

from __future__ import annotations

import _posixsubprocess
import contextvars
import json
import multiprocessing
import multiprocessing.util
import os
import shlex
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from helpers.child_tools import append_note
from helpers.counted_rest_server import rest_server
from helpers.passfds_curl import post_by_spawnv_passfds
from helpers.pinged import ping, ping_tape

from otel_agent_replay import agent_run, load_tape, record, replay
from otel_agent_replay.core import SideEffectRefused
from otel_agent_replay.instrumentation import agent_commit
from otel_agent_replay.proxy import mitmdump
from otel_agent_replay.replayer import _audit

TESTS = Path(__file__).resolve().parent.parent


@pytest.fixture
def recorded(tape: Path) -> Path:
    return ping_tape(tape)


def _noted(tape: Path, notes: Path, start: str) -> Path:
    """A tape of the agent's note and a child's, each written for real."""
    with record(tape), agent_run("a"):
        ping()
        append_note(str(notes), "in the agent")
        STARTS[start](notes)
    assert notes.read_text(encoding="utf-8").count("\n") == 2
    notes.unlink()
    return tape


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}


def _spawned_process(notes: Path) -> None:
    child = multiprocessing.get_context("spawn").Process(target=append_note, args=(str(notes), "from a child"))
    child.start()
    child.join(60)
    assert child.exitcode == 0


def _process_pool(notes: Path) -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(append_note, str(notes), "from a pool").result(60) == "written"


def _subprocess(notes: Path) -> None:
    command = [sys.executable, "-m", "helpers.child_tools", str(notes), "from a subprocess"]
    subprocess.run(command, check=True, env=_child_env(), timeout=60)


def _posix_spawn(notes: Path) -> None:
    argv = [sys.executable, "-m", "helpers.child_tools", str(notes), "from posix_spawn"]
    pid = os.posix_spawn(sys.executable, argv, _child_env())
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _posix_spawnp(notes: Path) -> None:
    """A program found on PATH (a shell that execs this interpreter)."""
    command = f"exec {shlex.quote(sys.executable)} -m helpers.child_tools {shlex.quote(str(notes))} spawnp"
    pid = os.posix_spawnp("sh", ["sh", "-c", command], _child_env())
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _spawnv_passfds(notes: Path) -> None:
    """multiprocessing's own helper: ``_posixsubprocess.fork_exec`` with no audit event (the child inherits
    this process's environment: the script is named by its path)."""
    script = str(TESTS / "helpers" / "child_tools.py")
    argv = [sys.executable, script, str(notes), "from spawnv_passfds"]
    pid = multiprocessing.util.spawnv_passfds(os.fsencode(sys.executable), argv, ())
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


STARTS: dict[str, Callable[[Path], None]] = {
    "multiprocessing spawn": _spawned_process,
    "ProcessPoolExecutor": _process_pool,
    "subprocess": _subprocess,
    "posix_spawn": _posix_spawn,
    "posix_spawnp": _posix_spawnp,
    "spawnv_passfds": _spawnv_passfds,
}


@pytest.mark.parametrize("start", list(STARTS))
def test_a_write_tool_called_in_a_child_process_is_answered_counted_and_warned(
    tape: Path, tmp_path: Path, start: str
) -> None:
    notes = tmp_path / "notes.txt"
    noted = _noted(tape, notes, start)
    with pytest.warns(Warning) as caught, replay(noted, stub=["append_note"]) as session, agent_run("a"):
        ping()
        assert append_note(str(notes), "in the agent") == "written"  # served from the tape here …
        STARTS[start](notes)  # … and in the child, which joined the replay
    [message] = [str(w.message) for w in caught if "child_processes" in str(w.message)]
    assert session.stats.child_processes == 1 and session.stats["child_processes"] == 1
    assert session.stats.real_side_effects == 0 and str(noted) in message and "copy_context" in message
    assert not notes.exists()  # no side effect happened
    assert session.stats.stubbed_side_effects == 2
    assert "joins the replay" in message
    if start == "posix_spawnp":
        assert message.startswith("os.posix_spawn(")
    if start == "spawnv_passfds":  # _posixsubprocess.fork_exec called by its module's name, no audit event
        assert message.startswith("multiprocessing.util.spawnv_passfds(")


def test_a_spawnv_passfds_post_is_recorded_then_refused_with_no_host_allowed(tape: Path, tmp_path: Path) -> None:
    """Issue 31's edge, the server up all along: a ``curl -X POST`` started by multiprocessing's helper is a step
    of the recording; in a strict replay with ``allow_hosts=[]`` it goes to the replay's proxy and is refused
    there (curl sees an HTTP error): 0 requests, 0 bytes at the server; the process is counted."""
    mitmdump()  # the proxy's program, or how to install it
    with rest_server() as server:
        with record(tape), agent_run("a"):
            ping()
            live = post_by_spawnv_passfds(f"{server.url}/items", '{"name": "lamp"}', tmp_path)
        assert live.status == 201 and json.loads(live.body) == {"id": 99, "name": "lamp"}
        assert [r[:2] for r in server.requests] == [("POST", "/items")]
        (run,) = load_tape(tape).runs
        assert [s.tool for s in run.steps] == ["ping", f"POST 127.0.0.1:{server.port}/items"]
        seen = (len(server.requests), server.received, server.connections)

        with pytest.raises(SideEffectRefused), replay(tape, allow_hosts=[]) as session, agent_run("a"):
            ping()
            replayed = post_by_spawnv_passfds(f"{server.url}/items", '{"name": "lamp"}', tmp_path)
        assert replayed.status == 403 and "SideEffectRefused" in replayed.body
        assert (len(server.requests), server.received, server.connections) == seen  # not a byte reached it
    assert session.stats.child_processes == 1 and session.stats.refused_side_effects == 1


def test_each_process_is_counted_and_the_warning_comes_once(recorded: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replay(recorded) as session, agent_run("a"):
            ping()
            subprocess.run(["true"], check=True)
            subprocess.run(["true"], check=True)
            child = multiprocessing.get_context("fork").Process(target=os.getpid)  # a fork inside start()
            child.start()
            child.join(30)
    assert session.stats.child_processes == 3  # the fork of multiprocessing's start() is not counted twice
    assert len([w for w in caught if "child_processes" in str(w.message)]) == 1


def test_a_thread_given_the_context_counts_and_one_without_it_does_not(recorded: Path) -> None:
    with pytest.warns(Warning), replay(recorded) as session, agent_run("a"):
        ping()
        bare = threading.Thread(target=subprocess.run, args=(["true"],))  # no replay in its context
        bare.start()
        bare.join(30)
        assert session.stats.child_processes == 0
        given = threading.Thread(target=contextvars.copy_context().run, args=(subprocess.run, ["true"]))
        given.start()
        given.join(30)
    assert session.stats.child_processes == 1


def test_no_process_is_watched_outside_a_replay(recorded: Path) -> None:
    start = multiprocessing.process.BaseProcess.start
    fork_exec = _posixsubprocess.fork_exec
    with replay(recorded), agent_run("a"):
        ping()
        assert multiprocessing.process.BaseProcess.start is not start and _posixsubprocess.fork_exec is not fork_exec
        assert {"subprocess.Popen", "os.fork", "os.posix_spawn"} <= _audit.watched()
    assert multiprocessing.process.BaseProcess.start is start and _posixsubprocess.fork_exec is fork_exec
    assert not {"subprocess.Popen", "os.fork", "os.posix_spawn"} & _audit.watched()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        subprocess.run(["true"], check=True)  # no replay: nothing to count, no warning


def test_the_commit_lookup_of_a_run_is_not_the_agents_process(recorded: Path) -> None:
    agent_commit.cache_clear()  # as in a fresh process: the first run looks its commit up with git
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replay(recorded) as session, agent_run("a") as run:
            ping()
    assert run.span.attributes is not None and run.span.attributes.get("agent_replay.agent_commit")
    assert session.stats.child_processes == 0
    assert not [w for w in caught if "child_processes" in str(w.message)]


_PLATFORM_SCRIPT = """
import platform, sys, warnings
from otel_agent_replay import agent_run, record, replay, tool

@tool(side_effect="read_only")
def ping() -> str:
    return "pong"

with record(sys.argv[1]), agent_run("a"):
    ping()
warnings.simplefilter("error")
with replay(sys.argv[1]) as session, agent_run("a"):
    ping()
    described = platform.platform()  # what the openai SDK sends in its headers: reads `uname -p`
print(session.stats.child_processes, bool(described))
"""


def test_the_standard_library_describing_the_machine_is_not_a_child_process(tmp_path: Path) -> None:
    """A fresh interpreter, where ``platform``'s cache is cold: its ``uname -p`` is no process of the agent."""
    done = subprocess.run(
        [sys.executable, "-c", _PLATFORM_SCRIPT, str(tmp_path / "t.jsonl")],
        capture_output=True,
        text=True,
        env=_child_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "True"]
