"""A tool-loop agent over the real ``openai`` SDK with a read-only tool and a write tool, in two versions.

The model (the fake provider's quiz, ``FakeProvider.odds[(case, version)]``) first asks for the
``weather`` tool (read-only: replayed from the tape by its arguments), then answers ``right`` or
``wrong`` at random with the seeded probability of its case and version; the agent then saves that
answer with ``save_note`` (a write tool: never run in a replay) and returns it. So a repeated run
whose model answered otherwise than when recorded calls the write tool with another argument than
the tape has: what a regression over repetitions must count, not fail on. ``right_answer`` judges a
run. Importable as ``helpers.notes_agent:notes_v2`` (the command line's ``--agent``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import openai

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.comparison import RunView
from otel_agent_replay.store import Evaluation

AGENT = "notes"
URL_ENV = "AGENT_REPLAY_QUIZ_URL"
MODEL = "gpt-4o-mini"
SAVED: list[tuple[str, str]] = []
"""(case, text) of every note that was really saved (a replay must add nothing here)."""
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "today's weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


@tool(side_effect="read_only")
def weather(city: str) -> str:
    return f"sunny in {city}"


@tool(side_effect="write")
def save_note(case: str, text: str) -> dict[str, Any]:
    SAVED.append((case, text))
    return {"saved": True, "note": f"n-{case}"}


def _loop(case: str, version: str) -> dict[str, Any]:
    client = openai.OpenAI(base_url=os.environ[URL_ENV] + "/v1", api_key="sk-test-notes", max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"quiz case={case} version={version}: what is the weather today?"}
    ]
    for _turn in range(4):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=_TOOLS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": weather(**arguments)})
    text = str(message.content)
    save_note(case, text)
    return {"answer": text}


@agent_run(AGENT, agent_version="v0")
def notes_v0(case: str) -> dict[str, Any]:
    return _loop(case, "v0")


@agent_run(AGENT, agent_version="v1")
def notes_v1(case: str) -> dict[str, Any]:
    return _loop(case, "v1")


@agent_run(AGENT, agent_version="v2")
def notes_v2(case: str) -> dict[str, Any]:
    return _loop(case, "v2")


def right_answer(view: RunView) -> Evaluation:
    """Passed when the agent answered ``right``."""
    output = view.final_output if isinstance(view.final_output, dict) else {}
    passed = output.get("answer") == "right"
    return Evaluation("right_answer", score=1.0 if passed else 0.0, passed=passed)


def lost_key(view: RunView) -> Evaluation:
    """A judge broken by a changed output: it raises ``KeyError`` when the answer is missing."""
    output = view.final_output if isinstance(view.final_output, dict) else {}
    return Evaluation("verdict", passed=output["verdict"] == "ok")


def says_nothing(view: RunView) -> None:
    """A judge that returns nothing."""
    return None


def says_empty(view: RunView) -> list[Evaluation]:
    """A judge that returns no evaluation."""
    return []


def record_suite(folder: Path, cases: tuple[str, ...], url: str) -> Path:
    """Record v0 on each case, one tape per case, into ``folder`` (the suite); the folder."""
    os.environ[URL_ENV] = url
    folder.mkdir(parents=True, exist_ok=True)
    for case in cases:
        with record(folder / f"{case}.jsonl"):
            notes_v0(case)
    return folder
