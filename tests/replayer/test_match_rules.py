"""Match rules: paths left out of call keys, recomputed at replay, set per tool, per replay or in pyproject.toml."""

from __future__ import annotations

import datetime as dt
import os
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.rawtape import steps_of

from otel_agent_replay import (
    ConfigurationError,
    TapeDrift,
    agent_run,
    load_tape,
    model_call,
    record,
    replay,
    tool,
)
from otel_agent_replay.core import attributes as A

YESTERDAY = dt.date(2025, 1, 30)
TODAY = dt.date(2025, 1, 31)


@model_call(provider="test")
def ask(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"answer": f"answered {len(messages)}"}


def _messages(day: dt.date, call_id: str = "call_1") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": f"You are helpful. Today is {day.isoformat()}."},
        {"role": "user", "content": "what is on my calendar?"},
        {"role": "tool", "tool_call_id": call_id, "content": "nothing"},
    ]


@pytest.fixture
def yesterdays_tape(tape: Path) -> Path:
    with record(tape), agent_run("a"):
        ask("m", _messages(YESTERDAY))
    return tape


def test_a_prompt_with_todays_date_ignored_by_a_path_hits_a_tape_recorded_yesterday(yesterdays_tape: Path) -> None:
    with pytest.raises(TapeDrift), replay(yesterdays_tape), agent_run("a"):
        ask("m", _messages(TODAY))  # without the rule: drift, with the field-level difference
    with replay(yesterdays_tape, key_ignore={"ask": ("messages[0].content",)}) as session, agent_run("a"):
        assert ask("m", _messages(TODAY)) == {"answer": "answered 3"}
    assert session.stats.hits == 1 and session.stats.drifts == 0


def test_the_rule_leaves_only_that_path_out(yesterdays_tape: Path) -> None:
    changed = _messages(TODAY)
    changed[1]["content"] = "something else"
    with pytest.raises(TapeDrift), replay(yesterdays_tape, key_ignore={"ask": "messages[0].content"}), agent_run("a"):
        ask("m", changed)


def test_key_ignore_on_the_decorator_and_any_index(tape: Path) -> None:
    @model_call(provider="test", key_ignore=("messages[0].content", "messages[*].tool_call_id"))
    def chat(model: str, messages: list[dict[str, Any]]) -> str:
        return "ok"

    with record(tape), agent_run("a"):
        chat("m", _messages(YESTERDAY, "call_abc"))
    (step,) = steps_of(tape)
    assert orjson.loads(step.attrs[A.KEY_IGNORE]) == ["messages[0].content", "messages[*].tool_call_id"]
    assert "Today is 2025-01-30" in step.attrs[A.MODEL_ARGUMENTS]  # the tape keeps the ignored fields
    with replay(tape) as session, agent_run("a"):
        assert chat("m", _messages(TODAY, "call_xyz")) == "ok"
    assert session.stats.hits == 1


def test_the_volatile_model_fields_preset(tape: Path) -> None:
    @model_call(provider="test", key_ignore="@model_volatile")
    def complete(model: str, messages: list[dict[str, Any]], user: str = "") -> str:
        return "ok"

    with record(tape), agent_run("a"):
        complete("m", _messages(TODAY, "call_1"), user="u-1")
    with replay(tape) as session, agent_run("a"):
        assert complete("m", _messages(TODAY, "call_2"), user="u-2") == "ok"
    assert session.stats.hits == 1
    with pytest.raises(TapeDrift), replay(tape), agent_run("a"):
        complete("other-model", _messages(TODAY, "call_2"), user="u-2")  # the model is not volatile


def test_a_rule_set_when_recording_is_recomputed_at_replay(tape: Path) -> None:
    with record(tape, key_ignore={"ask": ["messages[0].content"]}), agent_run("a"):
        ask("m", _messages(YESTERDAY))
    with replay(tape, key_ignore={"ask": ["messages[0].content"]}), agent_run("a"):
        ask("m", _messages(TODAY))
    with pytest.raises(TapeDrift), replay(tape), agent_run("a"):  # the rule is no longer in force
        ask("m", _messages(TODAY))
    with replay(tape) as session, agent_run("a"):
        ask("m", _messages(YESTERDAY))  # the recorded arguments themselves still hit
    assert session.stats.hits == 1


def test_every_tool_rule_and_tools_without_rules_keep_their_recorded_keys(tape: Path) -> None:
    @tool(side_effect="read_only")
    def lookup(q: str, at: str) -> str:
        return q

    with record(tape), agent_run("a"):
        lookup("x", "10:00")
        ask("m", _messages(YESTERDAY))
    with replay(tape, key_ignore={"*": ["at"], "ask": ["messages[0].content"]}) as session, agent_run("a"):
        lookup("x", "11:00")
        ask("m", _messages(TODAY))
    assert session.stats.hits == 2


def _pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(textwrap.dedent(body))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a new mtime even within a tick
    return path


def test_changing_the_rule_in_pyproject_needs_no_re_recording(
    yesterdays_tape: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    _pyproject(project, "[tool.otel-agent-replay]\nstub = []\n")
    with pytest.raises(TapeDrift), replay(yesterdays_tape), agent_run("a"):
        ask("m", _messages(TODAY))
    _pyproject(
        project,
        """
        [tool.otel-agent-replay.key_ignore]
        ask = ["messages[0].content"]
        """,
    )
    with replay(yesterdays_tape) as session, agent_run("a"):
        ask("m", _messages(TODAY))
    assert session.stats.hits == 1
    before = yesterdays_tape.read_bytes()
    _pyproject(project, '[tool.otel-agent-replay.key_ignore]\nask = ["messages[1].content"]\n')
    with pytest.raises(TapeDrift), replay(yesterdays_tape), agent_run("a"):
        ask("m", _messages(TODAY))
    assert yesterdays_tape.read_bytes() == before  # nothing was recorded again


def test_pyproject_allowed_hosts_and_default_stubs(tape: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    @tool(side_effect="write")
    def send(to: str) -> str:
        return f"sent to {to}"

    with record(tape), agent_run("a"):
        send("ops")
    monkeypatch.chdir(tmp_path)
    _pyproject(tmp_path, '[tool.otel-agent-replay]\nstub = ["send"]\nallow_hosts = ["10.0.0.1"]\n')
    with replay(tape) as session, agent_run("a"):
        assert send("ops") == "sent to ops"
        guard = session.network_guard
        assert guard is not None and guard.allows("10.0.0.1") and not guard.allows("127.0.0.1")
    assert session.stats.stubbed_side_effects == 1
    assert load_tape(tape).runs[0].steps[0].side_effect == "write"


def test_a_wrong_pyproject_setting_names_the_file_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = _pyproject(tmp_path, '[tool.otel-agent-replay]\nallow_hosts = "x"\nstub = [1]\n')
    with pytest.raises(ConfigurationError) as caught, record(tmp_path / "t.jsonl"):
        pass
    assert str(path) in str(caught.value) and "stub" in str(caught.value)
    _pyproject(tmp_path, '[tool.otel-agent-replay]\ntape_dir = "x"\n')
    with pytest.raises(ConfigurationError, match="unknown settings \\['tape_dir'\\]"), record(tmp_path / "t.jsonl"):
        pass
