"""The pytest plugin, run with pytester in real subprocesses: record once, replay, fail on drift."""

from __future__ import annotations

import shlex

import pytest
from helpers.counting_server import counting_server

from otel_agent_replay.pytest_plugin import safe_name

pytest_plugins = ["pytester"]

AGENT = """
import pytest
from pathlib import Path
from otel_agent_replay import agent_run, tool

LIVE = Path(__file__).with_name("live-calls.log")
REPORT = Path(__file__).with_name("report.txt")

@tool(side_effect="read_only")
def lookup(order_id: str, verbose: bool = False) -> dict:
    with LIVE.open("a") as fh:
        fh.write(f"lookup {order_id}\\n")
    return {"order": order_id, "state": "shipped"}

@tool(side_effect="write")
def write_report(text: str) -> int:
    REPORT.write_text(text)
    return len(text)

def agent(order_id):
    with agent_run("support"):
        found = lookup(order_id, verbose=VERBOSE)
        write_report(found["state"])
        return found

VERBOSE = False

@pytest.mark.agent_tape(stub=("write_report",))
def test_order_agent(agent_tape):
    assert agent("o-17") == {"order": "o-17", "state": "shipped"}
"""


def _live_calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "live-calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_record_once_then_replay_with_zero_live_calls(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    first = pytester.runpytest_subprocess("--agent-record-mode=once")
    first.assert_outcomes(passed=1)
    tape = pytester.path / "tapes" / "test_agent" / "test_order_agent.jsonl"
    assert tape.exists() and _live_calls(pytester) == ["lookup o-17"]
    (pytester.path / "report.txt").unlink()

    second = pytester.runpytest_subprocess()  # default mode: none (strict replay)
    second.assert_outcomes(passed=1)
    assert _live_calls(pytester) == ["lookup o-17"]  # nothing ran live the second time
    assert not (pytester.path / "report.txt").exists()  # the write never happened


def test_a_changed_argument_fails_with_the_field_level_drift(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    pytester.makepyfile(test_agent=AGENT.replace("VERBOSE = False", "VERBOSE = True"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TapeDrift*", "*verbose: false → true*"])
    assert _live_calls(pytester) == ["lookup o-17"]


def test_a_write_tool_never_runs_without_stub_and_the_test_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    (pytester.path / "report.txt").unlink()
    pytester.makepyfile(test_agent=AGENT.replace('@pytest.mark.agent_tape(stub=("write_report",))', ""))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SideEffectRefused*write_report*"])
    assert not (pytester.path / "report.txt").exists()


def test_missing_tape_in_mode_none_and_unused_steps(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    missing = pytester.runpytest_subprocess()
    missing.assert_outcomes(failed=1)  # a failure of the test, not an error of its setup
    missing.stdout.fnmatch_lines(
        [
            "*no tape for this test at*test_order_agent.jsonl*"
            "live: pytest test_agent.py::test_order_agent --agent-record-mode=once"
        ]
    )
    assert "Traceback" not in missing.stdout.str() and "_replay.py" not in missing.stdout.str()
    assert _live_calls(pytester) == []  # the body never ran live
    # the hint's command runs as printed (here, from the rootdir, as pytest prints node ids)
    line = next(x for x in missing.stdout.lines if "Record it once, live: pytest " in x)
    argv = shlex.split(line.split("Record it once, live: pytest ", 1)[1])
    pytester.runpytest_subprocess(*argv).assert_outcomes(passed=1)
    assert _live_calls(pytester) == ["lookup o-17"]
    shorter = AGENT.replace('        write_report(found["state"])\n', "")
    pytester.makepyfile(test_agent=shorter)
    unused = pytester.runpytest_subprocess()
    unused.assert_outcomes(failed=1)
    unused.stdout.fnmatch_lines(["*TapeUnused: 1 recorded step(s)*", "*write_report#1*"])
    switched = shorter.replace(
        'agent_tape(stub=("write_report",))', 'agent_tape(stub=("write_report",), fail_on_unused=False)'
    )
    pytester.makepyfile(test_agent=switched)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_tapes_dir_option_and_marker_path(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT.replace("agent_tape(stub=", 'agent_tape("shared/orders.jsonl", stub='))
    pytester.runpytest_subprocess("--agent-record-mode=once", "--agent-tapes-dir=fixtures").assert_outcomes(passed=1)
    assert (pytester.path / "fixtures" / "test_agent" / "shared" / "orders.jsonl").exists()
    escape = AGENT.replace("agent_tape(stub=", 'agent_tape("../../outside.jsonl", stub=')
    pytester.makepyfile(test_agent=escape)
    result = pytester.runpytest_subprocess("--agent-record-mode=once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*points outside the tapes folder*"])


def test_safe_names() -> None:
    assert safe_name("test_plain") == "test_plain"
    weird = safe_name("test_x[a/b-../c d]")
    assert "/" not in weird and ".." not in weird and weird.startswith("test_x_a_b-__c_d-")
    assert len(safe_name("test_" + "x" * 500)) <= 130


def test_the_options_do_not_clash_with_pytest_recording(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--agent-record-mode*", "*--agent-tapes-dir*"])
    assert "--record-mode" not in result.stdout.str().replace("--agent-record-mode", "")


def test_works_under_xdist_with_one_tape_per_test(pytester: pytest.Pytester) -> None:
    many = AGENT + "".join(
        f"""

@pytest.mark.agent_tape(stub=("write_report",))
def test_order_{i}(agent_tape):
    assert agent("o-{i}")["order"] == "o-{i}"
"""
        for i in range(6)
    )
    pytester.makepyfile(test_agent=many)
    pytester.runpytest_subprocess("-n", "2", "--agent-record-mode=once").assert_outcomes(passed=7)
    tapes = sorted(p.name for p in (pytester.path / "tapes" / "test_agent").iterdir())
    assert tapes == sorted(["test_order_agent.jsonl", *(f"test_order_{i}.jsonl" for i in range(6))])
    replayed = pytester.runpytest_subprocess("-n", "2")
    replayed.assert_outcomes(passed=7)
    assert sorted(_live_calls(pytester)) == sorted(["lookup o-17", *(f"lookup o-{i}" for i in range(6))])


def test_a_failing_replay_reports_the_divergence_first_in_pytest_words(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    pytester.makepyfile(test_agent=AGENT.replace("VERBOSE = False", "VERBOSE = True"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    lines = result.stdout.lines
    header = next(i for i, line in enumerate(lines) if line.strip("_ ") == "test_order_agent")
    body = [line for line in lines[header + 1 :] if line.strip()]
    assert body[0].startswith("TapeDrift: lookup#1: drift in run "), body[:3]  # the divergence comes first
    report = "\n".join(lines[header:])
    assert "pytest test_agent.py::test_order_agent --agent-record-mode=all" in report
    assert "replay(..., mode=" not in report  # the Python API's words are not pytest's
    for ours in ("_session.py", "_decorators.py", "_ledger.py", "_scope.py", "_plugin.py"):
        assert ours not in report, ours  # the SDK's own frames are hidden
    assert "test_agent.py" in report and "lookup(order_id, verbose=VERBOSE)" in report  # the agent's are not


def test_hints_name_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    pytester.makepyfile(test_agent=AGENT.replace('@pytest.mark.agent_tape(stub=("write_report",))', ""))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*without running it: @pytest.mark.agent_tape(stub=('write_report',))*"])


def test_the_conformance_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    (pytester.path / "report.txt").unlink()
    conformance = AGENT + (
        "\n\n@pytest.mark.agent_conform(tools=[lookup, write_report])\n"
        "def test_tools_still_answer_like_the_fixtures():\n"
        "    pass\n"
    )
    pytester.makepyfile(test_agent=conformance)
    pytester.runpytest_subprocess("-k", "conform").assert_outcomes(passed=1)
    assert _live_calls(pytester) == ["lookup o-17", "lookup o-17"]  # one live call of the read-only tool
    assert not (pytester.path / "report.txt").exists()  # the write tool was never called
    changed = conformance.replace('return {"order": order_id, "state": "shipped"}', 'return {"order": order_id}')
    pytester.makepyfile(test_agent=changed)
    result = pytester.runpytest_subprocess("-k", "conform")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no longer answer like the fixtures*", "*missing key: result.state*"])


def test_a_hint_names_the_test_as_typed_where_pytest_runs(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    tests = pytester.mkdir("tests")
    (tests / "test_agent.py").write_text(AGENT)
    result = pytester.runpytest_subprocess("tests")
    result.stdout.fnmatch_lines(["*live: pytest tests/test_agent.py::test_order_agent --agent-record-mode=once"])
    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.chdir(tests)
        inner = pytester.runpytest_subprocess()  # from the tests folder: the id is relative to it
    finally:
        monkeypatch.undo()
    inner.stdout.fnmatch_lines(["*live: pytest test_agent.py::test_order_agent --agent-record-mode=once"])


NETWORK_AGENT = """
import socket
import pytest
from otel_agent_replay import agent_run, tool

@tool(side_effect="read_only")
def lookup(order_id: str) -> dict:
    return {"order": order_id}

@pytest.mark.agent_tape(allow_hosts=[])
def test_undecorated_call(agent_tape):
    with agent_run("support"):
        lookup("o-1")
        if PORT:
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()

PORT = 0
"""


def test_the_plugins_strict_replays_have_the_network_guard_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=NETWORK_AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    with counting_server() as server:
        pytester.makepyfile(test_agent=NETWORK_AGENT.replace("PORT = 0", f"PORT = {server.port}"))
        result = pytester.runpytest_subprocess()
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([f"*NetworkBlocked*127.0.0.1:{server.port}*"])
        assert server.connections == 0
        recorded = pytester.runpytest_subprocess("--agent-record-mode=all")  # recording: no guard
        recorded.assert_outcomes(passed=1)
        assert server.connections == 1


def test_the_tapes_folder_comes_from_pyproject(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT)
    pytester.makefile(".toml", pyproject='[tool.otel-agent-replay]\ntapes_dir = "fixtures/tapes"\n')
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    assert (pytester.path / "fixtures" / "tapes" / "test_agent" / "test_order_agent.jsonl").exists()
    assert not (pytester.path / "tapes").exists()


FREED = """
import gc
import weakref
from otel_agent_replay import agent_run, tool

SESSIONS = []

@tool(side_effect="read_only")
def lookup(order_id: str) -> dict:
    return {"order": order_id}

def test_first(agent_tape):
    SESSIONS.append(weakref.ref(agent_tape))
    with agent_run("support"):
        assert lookup("o-1") == {"order": "o-1"}

def test_second_sees_the_first_freed():
    gc.collect()
    assert SESSIONS and SESSIONS[0]() is None, "the first test's replay session outlived its test"
"""


def test_a_test_s_replay_is_freed_when_the_test_ends(pytester: pytest.Pytester) -> None:
    """pytest keeps every item to the session's end: the plugin drops the test's replay (its session, options,
    index, tape lock) from the item once the test is over, so a suite does not keep one per test."""
    pytester.makepyfile(test_freed=FREED)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=2)
    pytester.runpytest_subprocess().assert_outcomes(passed=2)
