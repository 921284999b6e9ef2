"""Messages as short text for a terminal: what a model said, and a run as a chat."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from otel_agent_replay.core import visible

from ._parts import Message, chat_messages
from ._shapes import answer_of, prompt_of

OLD_INPUT = ("gen_ai.input.messages", "gen_ai.prompt")
OLD_OUTPUT = ("gen_ai.output.messages", "gen_ai.completion")


def _attribute_messages(attributes: Mapping[str, Any], names: tuple[str, ...], role: str) -> list[Message] | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, (str, bytes)):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                continue
        if isinstance(value, list):
            return chat_messages(value, role)
    return None


def sent_messages(tool: str, args: Any, attributes: Mapping[str, Any]) -> list[Message]:
    """What a model step was sent: its ``gen_ai.input.messages`` (or an older spelling), else its arguments."""
    found = _attribute_messages(attributes, OLD_INPUT, "user")
    if found is None:
        prompt = prompt_of(tool, args)
        found = list(prompt.messages) if prompt is not None else []
    return found


def said_messages(tool: str, result: Any, attributes: Mapping[str, Any]) -> list[Message]:
    """What a model step answered: its ``gen_ai.output.messages`` (or an older spelling), else read from its result."""
    found = _attribute_messages(attributes, OLD_OUTPUT, "assistant")
    if found is None:
        found = answer_of(tool, result) or []
    return found


def _flat(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode("utf-8")
    return visible(" ".join(text.split()))


def cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def part_text(part: Mapping[str, Any], limit: int | None = 80) -> str:
    """One part as a line: the text, ``→ tool(arguments)``, ``← response``, ``(thinking) …``."""
    kind = part.get("type")
    if kind == "text":
        return cut(_flat(part.get("content", "")), limit)
    if kind == "tool_call":
        return "→ " + cut(f"{part.get('name')}({_flat(part.get('arguments'))})", limit)
    if kind == "tool_call_response":
        return "← " + cut(_flat(part.get("response")), limit)
    if kind == "reasoning":
        return "(thinking) " + cut(_flat(part.get("content", "")), limit)
    return f"[{kind}]"


def said_text(messages: list[Message], limit: int | None = 80) -> str:
    """What a model said, on one line: its text and its tool calls."""
    pieces = [part_text(p, limit) for m in messages for p in m.get("parts") or () if isinstance(p, Mapping)]
    return " · ".join(p for p in pieces if p) or "(nothing)"
