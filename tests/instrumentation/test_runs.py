"""agent_run: the run span, its input and output, errors, nesting, decorator and async forms."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.rawtape import raw_spans, run_span_of, steps_of
from helpers.sample_tools import plain_tool
from opentelemetry import trace

from otel_agent_replay import agent_run, record
from otel_agent_replay.core import attributes as A


def test_run_that_raises_is_an_error_span_and_the_error_propagates(tape: Path) -> None:
    with record(tape), pytest.raises(RuntimeError, match="agent gave up"), agent_run("a"):
        plain_tool(1)
        raise RuntimeError("agent gave up")
    assert run_span_of(tape).span["status"]["code"] == 2
    assert len(steps_of(tape)) == 1


def test_run_nested_in_an_existing_span_is_its_child(tape: Path) -> None:
    with record(tape):
        tracer = trace.get_tracer("app")
        with tracer.start_as_current_span("POST /orders") as http, agent_run("a") as run:
            plain_tool(1)
    root = run_span_of(tape)
    assert root.parent_span_id == f"{http.get_span_context().span_id:016x}"
    assert run.trace_id == f"{http.get_span_context().trace_id:032x}"


def test_agent_run_as_decorator_records_input_and_output(tape: Path) -> None:
    @agent_run("support", agent_version="3")
    def answer(question: str, tone: str = "calm") -> str:
        plain_tool(1)
        return f"answer to {question}"

    @agent_run("support-async")
    async def answer_async(question: str) -> str:
        plain_tool(2)
        return "async answer"

    with record(tape):
        assert answer("why?") == "answer to why?"
        assert asyncio.run(answer_async("how?")) == "async answer"
    runs = [s for s in raw_spans(tape) if s.attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT]
    assert [r.attrs[A.INPUT] for r in runs] == ['{"question":"why?","tone":"calm"}', '{"question":"how?"}']
    assert [r.attrs[A.OUTPUT] for r in runs] == ['"answer to why?"', '"async answer"']
    assert runs[0].attrs[A.RUN_ID] != runs[1].attrs[A.RUN_ID]


def test_async_run_and_given_run_id(tape: Path) -> None:
    async def main() -> str:
        async with agent_run("a", run_id="run-42", conversation_id="conv-1") as run:
            await asyncio.sleep(0)
            return run.run_id

    with record(tape):
        assert asyncio.run(main()) == "run-42"
    root = run_span_of(tape)
    assert root.attrs[A.RUN_ID] == "run-42" and root.attrs[A.GEN_AI_CONVERSATION_ID] == "conv-1"


def test_the_run_span_says_what_it_was_captured_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tape: Path
) -> None:
    import platform
    import subprocess

    from otel_agent_replay import __version__, model_call
    from otel_agent_replay.instrumentation import agent_commit

    checkout = tmp_path / "agent"
    checkout.mkdir()
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "agent v1"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()

    @model_call(provider="openai", model="gpt-4o")
    def decide(prompt: str) -> dict[str, str]:
        return {"model": "gpt-4o-2024-08-06", "answer": "ok"}

    monkeypatch.chdir(checkout)
    agent_commit.cache_clear()
    try:
        with record(tape), agent_run("a", agent_version="1.3"):
            decide("x")
        attrs = run_span_of(tape).attrs
        assert attrs[A.SDK_VERSION] == __version__ and attrs[A.AGENT_VERSION] == "1.3"
        assert attrs[A.AGENT_COMMIT] == head and attrs[A.RECORDED_AT]
        assert attrs[A.PYTHON_VERSION].endswith(platform.python_version())
        (step,) = steps_of(tape)
        assert step.attrs[A.GEN_AI_PROVIDER_NAME] == "openai" and step.attrs[A.GEN_AI_REQUEST_MODEL] == "gpt-4o"
        assert step.attrs[A.GEN_AI_RESPONSE_MODEL] == "gpt-4o-2024-08-06"

        outside = tmp_path / "plain"
        outside.mkdir()
        monkeypatch.chdir(outside)
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
        agent_commit.cache_clear()
        other = tmp_path / "other.jsonl"
        with record(other), agent_run("a"):
            plain_tool(1)
        assert A.AGENT_COMMIT not in run_span_of(other).attrs  # not a checkout: no commit, no failure
    finally:
        agent_commit.cache_clear()
