"""``show`` of a fork tape names where the run came from: the recording (tape), the run and the step it
forked from, and the edit; in the tree, the conversation, one step and ``--json``. The edited-weather
fork: the openai SDK against the fake provider, ``get_weather#1`` answered with rain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers import weather_fork
from helpers.model_server import FakeProvider
from helpers.weather_fork import RAINY, fork_weather, record_weather

from otel_agent_replay import load_tape
from otel_agent_replay.cli import main


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with weather_fork.weather_world(tmp_path, monkeypatch) as fp:
        yield fp


def test_show_of_a_fork_names_the_recording_run_step_and_edit(
    tmp_path: Path, world: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = record_weather(tmp_path / "weather.jsonl", world)
    (recorded,) = load_tape(tape).runs
    fork_tape = fork_weather(tape, world, {"get_weather#1": RAINY})
    (forked,) = load_tape(fork_tape).runs
    lineage = (
        f"fork of {tape}, run {recorded.run_id}, at step get_weather#1, "
        'edit get_weather#1 = {"city":"Paris","sky":"rainy","temp_c":18}; diverged at openai.chat.completions#2'
    )

    assert main(["show", str(fork_tape)]) == 0
    out = capsys.readouterr().out
    head, second = out.splitlines()[:2]
    assert head.startswith(f"run {forked.run_id}") and second.strip() == lineage  # the tree's header

    assert main(["show", str(fork_tape), "--conversation"]) == 0
    assert capsys.readouterr().out.splitlines()[1].strip() == lineage

    assert main(["show", str(fork_tape), "--step", "get_weather#1"]) == 0
    assert lineage in capsys.readouterr().out

    assert main(["show", str(fork_tape), "--json"]) == 0
    (shown,) = orjson.loads(capsys.readouterr().out)
    assert shown["forked_from"] == {
        "tape": str(tape),
        "run_id": recorded.run_id,
        "step_id": "get_weather#1",
        "edits": {"get_weather#1": RAINY},
        "diverged_at": "openai.chat.completions#2",
    }

    assert main(["show", str(tape)]) == 0  # the recording is no fork
    assert "fork of" not in capsys.readouterr().out
    assert main(["show", str(tape), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)[0]["forked_from"] is None


def test_a_fork_header_carries_no_control_sequence_from_the_tape(
    tmp_path: Path, world: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = record_weather(tmp_path / "weather.jsonl", world)
    fork_tape = fork_weather(tape, world, {"get_weather#1": RAINY})
    text = fork_tape.read_text(encoding="utf-8")
    quoted = orjson.dumps(str(tape)).decode()
    assert quoted in text
    fork_tape.write_text(text.replace(quoted, orjson.dumps(f"{tape}\x1b[2J\x9b31m").decode()), encoding="utf-8")
    assert main(["show", str(fork_tape)]) == 0
    out = capsys.readouterr().out
    assert f"fork of {tape}\\x1b[2J\\x9b31m, run" in out and "\x1b" not in out and "\x9b" not in out
    assert main(["diff", str(tape), str(fork_tape)]) == 1
    out = capsys.readouterr().out
    assert "is a fork of the left run" in out and "\x1b" not in out and "\x9b" not in out
