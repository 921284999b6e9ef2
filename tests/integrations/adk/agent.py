"""A google-adk agent (``LlmAgent`` with a function tool, run by ``InMemoryRunner``) against a Gemini API at the
URL given, recorded or replayed on a tape: ``agent.py record|replay TAPE URL``. Runs in the google-adk
environment (``AGENT_REPLAY_ADK_PYTHON``); prints one JSON line of facts. ``agent.py MODE TAPE URL WRAP``: WRAP ``run``
puts the agent in an ``agent_run``, ``block`` leaves it to the block's own run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import warnings
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.google_llm import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types

from otel_agent_replay import AgentReplayWarning, agent_run, record, replay

CALLS: list[str] = []


def get_weather(city: str) -> dict[str, str]:
    """The forecast for a city."""
    CALLS.append(city)
    return {"city": city, "forecast": "sunny"}


async def ask(url: str, question: str) -> list[str]:
    agent = LlmAgent(
        name="forecaster",
        model=Gemini(model="gemini-test", base_url=url),
        instruction="Answer with the forecast.",
        tools=[get_weather],
    )
    runner = InMemoryRunner(agent=agent, app_name="weather")
    session = await runner.session_service.create_session(app_name="weather", user_id="ada")
    message = types.Content(role="user", parts=[types.Part(text=question)])
    texts = []
    async for event in runner.run_async(user_id="ada", session_id=session.id, new_message=message):
        for part in (event.content.parts if event.content else None) or []:
            if part.text:
                texts.append(part.text)
    return texts


def main() -> None:
    mode, tape, url, wrap = sys.argv[1:5]
    facts: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if mode == "record":
            with record(tape), agent_run("forecaster") if wrap == "run" else contextlib.nullcontext():
                facts["texts"] = asyncio.run(ask(url, "What is the weather in Oslo?"))
        else:
            with replay(tape) as session, agent_run("forecaster") if wrap == "run" else contextlib.nullcontext():
                facts["texts"] = asyncio.run(ask(url, "What is the weather in Oslo?"))
            facts["stats"] = dict(session.stats)
    facts["calls"] = CALLS
    facts["warnings"] = [str(w.message) for w in seen if issubclass(w.category, AgentReplayWarning)]
    print(json.dumps(facts, default=str))


if __name__ == "__main__":
    main()
