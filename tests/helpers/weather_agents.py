"""A weather agent over the real OpenAI and Anthropic SDKs (JSON or streamed): a model turn that asks
for ``get_weather``, the tool, and a model turn that answers with its result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai

from otel_agent_replay import agent_run, record, tool

from .minting_server import MintingProvider

KEY = "sk-test-Secret0123456789abcdef"


@tool(side_effect="read_only")
def get_weather(city: str) -> str:
    return f"sunny in {city}"


OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "The weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def _openai_turn(client: openai.OpenAI, messages: list[Any], stream: bool) -> dict[str, Any]:
    if not stream:
        message = (
            client.chat.completions.create(model="gpt-test", messages=messages, tools=OPENAI_TOOLS).choices[0].message
        )
        return message.model_dump(exclude_none=True)
    said = ""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in client.chat.completions.create(model="gpt-test", messages=messages, tools=OPENAI_TOOLS, stream=True):
        delta = chunk.choices[0].delta
        said += delta.content or ""
        for call in delta.tool_calls or ():
            have = calls.setdefault(
                call.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            have["id"] = call.id or have["id"]
            if call.function is not None:
                have["function"]["name"] += call.function.name or ""
                have["function"]["arguments"] += call.function.arguments or ""
    out: dict[str, Any] = {"role": "assistant", "content": said or None}
    if calls:
        out["tool_calls"] = [calls[k] for k in sorted(calls)]
    return out


def openai_agent(url: str, city: str, stream: bool) -> str:
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": f"What is the weather in {city}?"}]
    with agent_run("weather", input=city):
        first = _openai_turn(client, messages, stream)
        messages.append(first)
        for call in first.get("tool_calls", ()):
            result = get_weather(**json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        final = _openai_turn(client, messages, stream)
        return str(final["content"])


def _anthropic_turn(client: anthropic.Anthropic, messages: list[Any], stream: bool) -> Any:
    kw: dict[str, Any] = {"model": "claude-test", "max_tokens": 100, "messages": messages, "tools": ANTHROPIC_TOOLS}
    if not stream:
        return client.messages.create(**kw)
    with client.messages.stream(**kw) as events:
        return events.get_final_message()


def anthropic_agent(url: str, city: str, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": f"What is the weather in {city}?"}]
    with agent_run("weather", input=city):
        first = _anthropic_turn(client, messages, stream)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": get_weather(**b.input)}
            for b in first.content
            if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})
        final = _anthropic_turn(client, messages, stream)
        return str(final.content[0].text)


def record_weather(provider: MintingProvider, which: str, stream: bool, city: str, path: Path) -> str:
    with record(path):
        if which == "openai":
            return openai_agent(provider.openai_url, city, stream)
        return anthropic_agent(provider.url, city, stream)


CASES = [("openai", False), ("openai", True), ("anthropic", False), ("anthropic", True)]
