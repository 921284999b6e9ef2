"""A quiz agent whose model is right with a probability the test sets per case and version.

It looks its question up (a read-only tool: replayed by ``regress``), asks the fake provider's
model over the real ``openai`` SDK (live under ``regress(models="live")``) and answers what the
model said. ``FakeProvider.odds[(case, version)]`` decides how often the model says ``right``;
``right_answer`` judges a run. The provider's URL comes from ``AGENT_REPLAY_QUIZ_URL``, so worker
processes and command-line runs find it too. Importable as ``helpers.quiz_agent:quiz_v2``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import openai

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.comparison import RunView
from otel_agent_replay.store import Evaluation

AGENT = "quiz"
URL_ENV = "AGENT_REPLAY_QUIZ_URL"
MODEL = "gpt-4o-mini"
"""A model genai-prices knows, so a report can price the repetitions."""


@tool(side_effect="read_only")
def question_of(case: str) -> str:
    return f"What is the answer to case {case}?"


def _ask(case: str, version: str) -> dict[str, Any]:
    question = question_of(case)
    client = openai.OpenAI(base_url=os.environ[URL_ENV] + "/v1", api_key="sk-test-quiz", max_retries=0)
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": f"quiz case={case} version={version}: {question}"}]
    )
    return {"answer": reply.choices[0].message.content}


@agent_run(AGENT, agent_version="v0")
def quiz_v0(case: str) -> dict[str, Any]:
    return _ask(case, "v0")


@agent_run(AGENT, agent_version="v1")
def quiz_v1(case: str) -> dict[str, Any]:
    return _ask(case, "v1")


@agent_run(AGENT, agent_version="v2")
def quiz_v2(case: str) -> dict[str, Any]:
    return _ask(case, "v2")


def right_answer(view: RunView) -> Evaluation:
    """Passed when the agent answered ``right``."""
    output = view.final_output if isinstance(view.final_output, dict) else {}
    passed = output.get("answer") == "right"
    return Evaluation("right_answer", score=1.0 if passed else 0.0, passed=passed)


def record_suite(folder: Path, cases: tuple[str, ...], url: str) -> Path:
    """Record v0 on each case, one tape per case, into ``folder`` (the suite); the folder."""
    os.environ[URL_ENV] = url
    folder.mkdir(parents=True, exist_ok=True)
    for case in cases:
        with record(folder / f"{case}.jsonl"):
            quiz_v0(case)
    return folder
