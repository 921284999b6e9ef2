"""The causal diff on a real fork: the openai SDK against the fake provider, a weather tool over httpx.

Recorded once; forked with ``edit={"get_weather#1": {... "sky": "rainy"}}`` and ``then="live"``; then
``diff`` (text and ``--json``) and ``compare()`` must name one cause, the edit, with the model's new
messages, its answer, the note and the output nested under it, and no missing child step.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers import weather_fork
from helpers.model_server import FakeProvider
from helpers.weather_fork import RAINY, fork_weather, record_weather

from otel_agent_replay import compare, load_tape
from otel_agent_replay.cli import main


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with weather_fork.weather_world(tmp_path, monkeypatch) as fp:
        yield fp


def _diff_json(a: Path, b: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    status = main(["diff", str(a), str(b), "--json"])
    return status, orjson.loads(capsys.readouterr().out)


def test_an_edited_tool_result_is_one_cause_with_its_consequences_nested(
    tmp_path: Path, world: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = record_weather(tmp_path / "weather.jsonl", world)
    (recorded,) = load_tape(tape).runs
    child = next(s.step_id for s in recorded.steps if s.parent_step_id == "get_weather#1")
    assert child.startswith("get_weather#1/GET 127.0.0.1:")  # the tool's own HTTP call is on the tape
    fork_tape = fork_weather(tape, world, {"get_weather#1": RAINY})

    status, data = _diff_json(tape, fork_tape, capsys)
    assert status == 1
    assert list(data).index("causes") < list(data).index("divergences")
    (cause,) = data["causes"]  # type: ignore[misc]
    assert cause["origin"] == "edit" and cause["step"] == "get_weather#1"
    assert (cause["path"], cause["left"], cause["right"]) == ("result.sky", "sunny", "rainy")
    consequences = cause["consequences"]
    assert cause["consequence_count"] == len(consequences) >= 4
    steps = {(c["step"], c["kind"], c["carried"]) for c in consequences}
    assert ("openai.chat.completions#2", "args", "data") in steps  # the tool message carried "rainy"
    assert ("openai.chat.completions#2", "result", "input") in steps  # the model's answer written from it
    assert ("save_note#1", "args", "data") in steps  # the note the model's answer became
    assert ("", "output", "data") in steps
    assert all(d["kind"] != "step_missing" for d in data["divergences"])  # type: ignore[attr-defined]
    assert data["answered"] == [child]
    (fork,) = data["forks"]  # type: ignore[misc]
    assert fork["side"] == "right" and fork["of_other"] is True and fork["step_id"] == "get_weather#1"
    assert fork["edits"] == {"get_weather#1": RAINY} and fork["tape"] == str(tape)

    result = compare(tape, fork_tape)
    assert result.first_cause is not None and result.first_cause.count == len(consequences)
    assert len(result.differences) == 1 + len(consequences)  # every difference sits in the one cause

    assert main(["diff", str(tape), str(fork_tape)]) == 1
    text = capsys.readouterr().out
    assert "1 cause(s)" in text and f"{len(consequences)} consequence(s)" in text
    assert "first cause edit get_weather#1" in text and "result.sky" in text
    assert '- "sunny"' in text and '+ "rainy"' in text
    assert "right run" in text and "is a fork of the left run" in text and "step_missing" not in text


def test_two_independent_tool_results_are_two_causes(
    tmp_path: Path, world: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = record_weather(tmp_path / "weather.jsonl", world, tools=2)
    edits = {"get_weather#1": RAINY, "get_time#1": {"city": "Paris", "local": "23:50"}}
    fork_tape = fork_weather(tape, world, edits, tools=2)
    status, data = _diff_json(tape, fork_tape, capsys)
    assert status == 1
    causes = data["causes"]
    assert [(c["origin"], c["step"], c["path"]) for c in causes] == [  # type: ignore[attr-defined]
        ("edit", "get_weather#1", "result.sky"),
        ("edit", "get_time#1", "result.local"),
    ]
    chat = [c for c in causes[1]["consequences"] if c["step"] == "openai.chat.completions#2"]  # type: ignore[index]
    assert [c["carried"] for c in chat] == ["data"]  # the time's tool message is the time's consequence


def test_a_recording_diffed_with_itself_and_with_its_plain_replay_is_the_same(
    tmp_path: Path, world: FakeProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = record_weather(tmp_path / "weather.jsonl", world)
    assert main(["diff", str(tape), str(tape)]) == 0
    assert "do not diverge" in capsys.readouterr().out
    again = record_weather(tmp_path / "again.jsonl", world)
    status, data = _diff_json(tape, again, capsys)
    assert status == 0 and data["causes"] == [] and data["forks"] == []


def test_two_recordings_whose_two_tools_answered_otherwise_are_two_causes(
    tmp_path: Path, world: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No edit: the weather service itself answered otherwise. Each tool's result is a cause, its own
    HTTP call nested under it (``parent``), the model's messages under the cause they carry."""
    tape = record_weather(tmp_path / "weather.jsonl", world, tools=2)
    monkeypatch.setitem(weather_fork.SKY, "Paris", "rainy")
    monkeypatch.setitem(weather_fork.LOCAL, "Paris", "23:50")
    again = record_weather(tmp_path / "later.jsonl", world, tools=2)
    status, data = _diff_json(tape, again, capsys)
    assert status == 1 and data["forks"] == []
    causes = data["causes"]
    assert [(c["origin"], c["step"], c["path"], c["left"], c["right"]) for c in causes] == [  # type: ignore[attr-defined]
        ("tool_result", "get_weather#1", "result.sky", "sunny", "rainy"),
        ("tool_result", "get_time#1", "result.local", "14:05", "23:50"),
    ]
    for cause, tool in zip(causes, ("weather", "time"), strict=True):  # type: ignore[call-overload]
        inside = [c for c in cause["consequences"] if c["carried"] == "parent"]
        assert [c["step"].split(" ")[0] for c in inside] == [f"{cause['step']}/GET"]
        assert inside[0]["step"].endswith(f"/{tool}#1") and inside[0]["kind"] == "result"
    chat = {c["path"]: c for c in causes[1]["consequences"] if c["step"] == "openai.chat.completions#2"}  # type: ignore[index]
    assert list(chat) == ["args.messages[3].content"] and chat["args.messages[3].content"]["carried"] == "data"
    total = sum(c["consequence_count"] for c in causes) + len(causes)  # type: ignore[attr-defined]
    assert total == len(data["divergences"])  # type: ignore[arg-type]

    assert main(["diff", str(tape), str(again)]) == 1
    lines = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.lstrip().startswith(("first cause", "cause "))]
    assert [lines[i].split()[-1] for i in heads] == ["get_weather#1", "get_time#1"]
    assert "2 cause(s)" in lines[0] and "step_missing" not in "\n".join(lines)
    nested = lines[heads[0] + 1 : heads[1]]  # the first cause's own change, then its consequences, indented
    assert nested[0].split() == ["result", "result.sky"] and "consequence(s):" in nested[3]
    assert all(line.startswith("      ") for line in nested[4:])
