"""RunView: facts and assertions over a recorded or replayed run, with readable failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay import RunView, agent_run, model_call, record, replay, tool


@tool(side_effect="read_only")
def search(query: str, limit: int = 3) -> list[str]:
    return [query] * limit


@tool(side_effect="external")
def send_email(to: str) -> str:
    return "sent"


@model_call(provider="p", model="m")
def think(prompt: str) -> dict[str, Any]:
    return {"text": "ok", "usage": {"input_tokens": 10, "output_tokens": 4}}


def _agent() -> None:
    with agent_run("mail") as run:
        think("plan")
        search("invoices", limit=5)
        think("write")
        search("customers")
        run.set_output("drafted")


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    with record(path):
        _agent()
    return path


def test_facts(tape: Path) -> None:
    view = RunView(tape)
    assert view.tools_called == ["search", "search"] and view.tool_names == {"search"}
    assert view.step_count == 4 and view.tokens_in == 20 and view.tokens_out == 8
    assert view.final_output == "drafted"
    assert [c.args for c in view.calls_of("search")] == [
        {"query": "invoices", "limit": 5},
        {"query": "customers", "limit": 3},
    ]


def test_assertions_pass_and_chain(tape: Path) -> None:
    RunView(tape).order_before("think", "search").called_with("search", limit=5).never_called("send_email")


def test_failures_are_readable(tape: Path) -> None:
    view = RunView(tape)
    with pytest.raises(AssertionError, match=r"expected a call search\(limit=7\); its calls were:\n  seq 2"):
        view.called_with("search", limit=7)
    with pytest.raises(AssertionError, match="send_email was never called"):
        view.called_with("send_email", to="x")
    with pytest.raises(AssertionError, match=r"expected search before think, but think came first \(seq 1 < 2\)"):
        view.order_before("search", "think")
    with pytest.raises(AssertionError, match="but nowhere was never called"):
        view.order_before("nowhere", "search")
    with pytest.raises(AssertionError, match="expected search never to be called; it was called at seq 2, 4"):
        view.never_called("search")
    with pytest.raises(AssertionError, match=r"expected a call search\(limit='5'\)"):
        view.called_with("search", limit="5")  # 5 and "5" differ


def test_view_of_a_replay(tape: Path) -> None:
    with replay(tape) as session:
        _agent()
    view = session.view()
    assert view.tools_called == ["search", "search"] and view.tokens_in == 20 and view.final_output == "drafted"
    view.called_with("search", query="customers").never_called("send_email")


def test_a_tape_of_several_runs_needs_a_choice(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    with record(path):
        _agent()
        _agent()
    with pytest.raises(ValueError, match="has 2 runs; pick one"):
        RunView(path)


def test_view_while_recording_matches_the_view_of_its_replay(tmp_path: Path) -> None:
    path = tmp_path / "once.jsonl"
    with replay(path, mode="once") as recording:
        _agent()
    with replay(path) as replaying:
        _agent()
    first, second = recording.view(), replaying.view()
    assert recording.stats["mode"] == "record"
    assert [(c.tool, c.args, c.seq) for c in first.calls] == [(c.tool, c.args, c.seq) for c in second.calls]
    assert first.tokens_out == second.tokens_out == 8 and first.final_output == second.final_output == "drafted"
