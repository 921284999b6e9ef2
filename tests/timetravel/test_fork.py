"""Time travel: a replay that forks at its first divergence (then="live"), edited steps, the fork tape."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fork_agent
from helpers.model_server import FakeProvider, fake_provider

from otel_agent_replay import TapeDrift, TapeMiss, agent_run, load_tape, record, replay
from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.core import attributes as A


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("FORK_AGENT_MARKERS", str(markers))
    fork_agent.SEARCHED.clear()
    with fake_provider() as fp:
        yield fp


def _recorded(tape: Path, fp: FakeProvider) -> str:
    with record(tape), agent_run("shop"):
        text = fork_agent.shop(fp.openai_url)
    marker = Path(fork_agent.os.environ["FORK_AGENT_MARKERS"]) / "report-sent"
    assert marker.exists()
    marker.unlink()
    fork_agent.SEARCHED.clear()
    return text


def _report_fake(text: str) -> dict[str, object]:
    return {"sent": "to the fake"}


def test_a_changed_prompt_forks_live_at_the_model_call_that_differs(tape: Path, provider: FakeProvider) -> None:
    _recorded(tape, provider)
    before = len(provider.requests)
    with replay(tape, then="live", fallbacks={"send_report": _report_fake}) as r, agent_run("shop"):
        text = fork_agent.shop(provider.openai_url, style="in detail")
    assert len(provider.requests) == before + 1  # only the diverging model call went live
    assert fork_agent.SEARCHED == []  # the searches before the fork were hits
    assert not (Path(fork_agent.os.environ["FORK_AGENT_MARKERS"]) / "report-sent").exists()
    assert "The tools said" in text
    assert r.fork is not None and r.fork.step_id == "openai.chat.completions#2" and r.fork.cause == "drift"
    assert "Summarise in detail" in r.fork.difference
    assert r.stats.hits == 3 and r.stats.live_model_calls == 1 and r.stats.fallback_calls == 1
    fork_tape = Path(r.fork.tape or "")
    assert fork_tape == tape.with_name("run.fork.jsonl")
    (run,) = load_tape(fork_tape).runs
    assert run.attributes[A.FORKED_FROM].endswith(":openai.chat.completions#2")
    assert [s.tool for s in run.steps][-2:] == ["openai.chat.completions", "send_report"]


def test_an_edited_search_takes_the_other_branch_and_names_where_it_forked(tape: Path, provider: FakeProvider) -> None:
    _recorded(tape, provider)
    with (
        replay(tape, edit={"search#2": {"results": []}}, then="live", fallbacks={"send_report": _report_fake}) as r,
        agent_run("shop"),
    ):
        text = fork_agent.shop(provider.openai_url)
    assert fork_agent.SEARCHED == ["chair"]  # the branch the recording never took ran live
    assert r.fork is not None and r.fork.tool == "search" and r.fork.cause == "miss" and r.fork.step_id is None
    assert "red chair" in text
    assert [d.kind.value for d in r.report][:1] == ["miss"]


def test_an_edited_error_exercises_the_error_branch_offline(tape: Path, provider: FakeProvider) -> None:
    _recorded(tape, provider)
    before = len(provider.requests)
    with replay(tape, edit={"search#1": TimeoutError("catalogue too slow")}) as r, agent_run("shop"):
        text = fork_agent.shop(provider.openai_url)
    assert text == "the search timed out"
    assert len(provider.requests) == before and fork_agent.SEARCHED == []
    assert r.stats.overrides_applied == 1 and r.fork is None


def test_the_default_stays_strict(tape: Path, provider: FakeProvider) -> None:
    _recorded(tape, provider)
    with pytest.raises(TapeDrift, match="Summarise in detail"), replay(tape), agent_run("shop"):
        fork_agent.shop(provider.openai_url, style="in detail")
    assert not tape.with_name("run.fork.jsonl").exists()


def test_an_edit_of_a_step_the_tape_lacks_names_the_steps_it_has(tape: Path, provider: FakeProvider) -> None:
    _recorded(tape, provider)
    with pytest.raises(ConfigurationError, match=r"search#9.*search#1"), replay(tape, edit={"search#9": {}}):
        pass


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    tests = Path(__file__).parent.parent
    return subprocess.run(
        [sys.executable, "-m", "otel_agent_replay.cli", *args],
        cwd=tests,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_fork_command_edits_a_step_and_says_where_the_run_left_the_recording(
    tape: Path, provider: FakeProvider
) -> None:
    _recorded(tape, provider)
    fork_tape = tape.with_name("what-if.jsonl")
    env = {"FORK_AGENT_URL": provider.openai_url}
    done = _cli(
        "fork", str(tape), "--agent", "helpers.fork_agent:run", "--at", "search#2", "--result", '{"results": []}',
        "--then", "live", "--stub", "send_report", "-o", str(fork_tape), env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "forked at a call of search the recording does not have" in done.stdout
    assert str(fork_tape) in done.stdout
    assert not (Path(fork_agent.os.environ["FORK_AGENT_MARKERS"]) / "report-sent").exists()
    (run,) = load_tape(fork_tape).runs
    assert [s.tool for s in run.steps].count("search") == 3
    bad = _cli("fork", str(tape), "--agent", "helpers.fork_agent:run", "--at", "search#7", "--result", "{}", env=env)
    assert bad.returncode == 2 and "search#7" in bad.stderr and "search#2" in bad.stderr


def test_the_fork_command_calls_an_agent_that_takes_its_task_with_the_recorded_input(
    tape: Path, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORK_AGENT_URL", provider.openai_url)
    with record(tape):
        fork_agent.research("Find a lamp and a desk for the study")
    (recorded,) = load_tape(tape).runs
    assert recorded.input == {"task": "Find a lamp and a desk for the study"}
    (Path(fork_agent.os.environ["FORK_AGENT_MARKERS"]) / "report-sent").unlink()
    fork_tape = tape.with_name("research-fork.jsonl")
    env = {"FORK_AGENT_URL": provider.openai_url}
    argv = ["fork", str(tape), "--agent", "helpers.fork_agent:research", "--at", "search#2", "--result"]
    done = _cli(*argv, '{"results": []}', "--stub", "send_report", "-o", str(fork_tape), env=env)
    assert done.returncode == 0, done.stderr
    assert "forked at a call of search the recording does not have" in done.stdout
    (run,) = load_tape(fork_tape).runs
    assert run.input == recorded.input, "called with the recorded run's input"
    assert [s.tool for s in run.steps].count("search") == 3 and run.steps[-1].tool == "send_report"
    assert not (Path(fork_agent.os.environ["FORK_AGENT_MARKERS"]) / "report-sent").exists()

    refused = _cli(*argv, '{"results": []}', env=env)  # no --stub: the write tool is refused, the hint a flag
    assert refused.returncode == 1
    assert "SideEffectRefused" in refused.stderr and "--stub send_report" in refused.stderr
    assert "stub=(" not in refused.stderr, "the CLI's hint names its option, not the Python parameter"


def test_a_call_after_a_fallbacks_fork_without_its_fake_names_fallbacks(
    tape: Path, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORK_AGENT_URL", provider.openai_url)
    with record(tape):
        fork_agent.research("Find a lamp and a desk")
    (Path(fork_agent.os.environ["FORK_AGENT_MARKERS"]) / "report-sent").unlink()
    with pytest.raises(TapeMiss) as caught, replay(tape, then="fallbacks", edit={"search#2": {"results": []}}):
        fork_agent.research("Find a lamp and a desk")
    text = str(caught.value)
    assert "(its 3rd call, live seq 4) is where the replay forked (miss: " in text
    assert "then='fallbacks' sends every call from the fork on to its fake in fallbacks=" in text
    assert "fallbacks= has none for search" in text
    assert "replay(..., fallbacks={'search': fake})" in text and "replay(..., then='live')" in text
    assert "new_episodes" not in text, "no mode records what a fork's fakes should answer"

    argv = ["fork", str(tape), "--agent", "helpers.fork_agent:research", "--at", "search#2", "--result"]
    done = _cli(*argv, '{"results": []}', "--then", "fallbacks", env={"FORK_AGENT_URL": provider.openai_url})
    assert done.returncode == 1
    said = " ".join(done.stderr.split())  # the console wraps long lines
    assert "the Python replay(..., fallbacks={'search': fake}), which fork has no flag for" in said
    assert "--then live" in said and "--then fallbacks" not in said.split("To fix:")[1]
