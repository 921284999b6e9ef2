"""Whole agent loops in pydantic-ai, the OpenAI Agents SDK and LangChain (``create_agent``), their model
talking to a fake provider on 127.0.0.1 through the openai SDK, their tools decorated with ``@tool``:
recorded, then replayed offline with the same final output, no live model or tool call, the write
tool never run; a changed prompt is drift."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.model_server import FakeProvider, fake_provider

from otel_agent_replay import TapeDrift, agent_run, record, replay, tool

API_KEY = "sk-test-framework-0123456789"
RAN: list[str] = []


@tool(side_effect="read_only")
def get_weather(city: str) -> str:
    """The weather in a city."""
    RAN.append("get_weather")
    return f"sunny in {city}"


@tool(side_effect="write")
def save_note(text: str) -> str:
    """Save a note."""
    RAN.append("save_note")
    return f"saved {text!r}"


Agent = Callable[[str, str], str]
"""(base URL, instructions) → the agent's final text."""


def _pydantic_ai(url: str, instructions: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(base_url=url, api_key=API_KEY))
    agent = Agent(model, instructions=instructions, tools=[get_weather, save_note], retries=0)
    return str(agent.run_sync("Weather in Paris, and note it").output)


def _openai_agents(url: str, instructions: str) -> str:
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # the SDK's own tracing would send to OpenAI
    client = openai.AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0)
    agent = Agent(
        name="notes",
        instructions=instructions,
        model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
        tools=[function_tool(get_weather), function_tool(save_note)],
    )
    return str(asyncio.run(Runner.run(agent, "Weather in Paris, and note it")).final_output)


def _langchain(url: str, instructions: str) -> str:
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-test", base_url=url, api_key=API_KEY, max_retries=0)  # type: ignore[arg-type]
    agent = create_agent(model, tools=[get_weather, save_note], system_prompt=instructions)
    state = agent.invoke({"messages": [{"role": "user", "content": "Weather in Paris, and note it"}]})
    return str(state["messages"][-1].content)


AGENTS: dict[str, Agent] = {"pydantic-ai": _pydantic_ai, "openai-agents": _openai_agents, "langchain": _langchain}


def _record(tape: Path, fp: FakeProvider, agent: Agent) -> str:
    with record(tape), agent_run("notes"):
        return agent(fp.openai_url, "You keep notes.")


@pytest.mark.parametrize("name", list(AGENTS))
def test_agent_loop_records_then_replays_offline(tape: Path, name: str) -> None:
    agent = AGENTS[name]
    RAN.clear()
    with fake_provider() as fp:
        live = _record(tape, fp, agent)
    assert sorted(RAN) == ["get_weather", "save_note"]  # frameworks may run parallel tool calls concurrently
    assert len(fp.requests) == 2  # the tool-calling turn, then the answer
    assert "sunny in Paris" in live and "saved 'Paris'" in live
    RAN.clear()
    with replay(tape, stub=("save_note",)) as session:
        replayed = agent(fp.openai_url, "You keep notes.")
    assert replayed == live
    assert RAN == []  # neither tool ran; the write tool's recorded result was served
    assert len(fp.requests) == 2
    stats = session.stats
    assert (stats.live_model_calls, stats.live_tool_calls, stats.real_side_effects) == (0, 0, 0)
    assert stats.hits == 4 and stats.stubbed_side_effects == 1


@pytest.mark.parametrize("name", list(AGENTS))
def test_a_changed_prompt_is_drift(tape: Path, name: str) -> None:
    agent = AGENTS[name]
    with fake_provider() as fp:
        _record(tape, fp, agent)
    RAN.clear()
    with pytest.raises(TapeDrift) as info, replay(tape, stub=("save_note",)):
        agent(fp.openai_url, "You keep very short notes.")
    assert "openai.chat.completions" in str(info.value)
    assert "You keep very short notes." in str(info.value)
    assert RAN == []
