"""Messages of model steps → the session's transcript (rows of ``message``).

A model step carries the messages it was sent (``gen_ai.input.messages``) and the ones it answered
(``gen_ai.output.messages``). Each later call of a conversation is sent the whole history again,
so the transcript takes, per model step in seq order, only the input messages past what it
already holds (the history the previous step was sent, then that step's answer), then the step's
output messages. A step sent an unrelated history (another conversation) contributes all of it.

Message shapes understood: chat messages (``role``, ``content`` as text or parts, ``tool_calls``),
chat completion choices (``{"message": {...}}``), Anthropic content blocks (``text``, ``tool_use``,
``tool_result``), Responses API output items (``message``, ``function_call``) and the GenAI
semantic conventions' ``parts``. Roles become the contract's four: ``developer`` → system,
``function`` → tool, ``model``/``ai`` → assistant, ``human`` → user; another role becomes user
for a sent message and assistant for an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from otel_agent_replay.tape import Step

__all__ = ["Message", "messages_of", "transcript"]

_ROLES: Final = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "model": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}
_TEXT_PARTS: Final = frozenset({"text", "input_text", "output_text"})


@dataclass(frozen=True, slots=True)
class Message:
    """One message as the store keeps it."""

    role: str
    content: str | None
    tool_calls_json: str | None

    @property
    def key(self) -> tuple[str, str | None]:
        """What makes two messages the same in a history: role and text (tool-call ids are minted per run)."""
        return (self.role, self.content)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")


def _parts(parts: list[Any], calls: list[Any]) -> tuple[list[str], bool]:
    """Text of content parts (tool calls go to ``calls``); whether a part was a tool result."""
    texts: list[str] = []
    tool_result = False
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            text = part.get("text", part.get("content"))
            if isinstance(text, str):
                texts.append(text)
        elif kind in ("tool_use", "tool_call", "function_call"):
            calls.append(part)
        elif kind in ("tool_result", "tool_call_response"):
            tool_result = True
            inner = part.get("content", part.get("response"))
            texts.append(inner if isinstance(inner, str) else _json(inner))
    return texts, tool_result


def _message(item: Any, default_role: str) -> Message | None:
    if not isinstance(item, dict):
        return None
    inner = item.get("message")
    if isinstance(inner, dict):  # a chat completion choice
        item = inner
    calls: list[Any] = []
    if item.get("type") == "function_call":  # Responses API output item
        return Message("assistant", None, _json([item]))
    raw_role = item.get("role")
    role = _ROLES.get(raw_role.lower(), default_role) if isinstance(raw_role, str) else default_role
    content = item.get("content")
    parts = item.get("parts")
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        found, tool_result = _parts(content, calls)
        texts.extend(found)
        if tool_result and role == "user":
            role = "tool"
    elif content is not None:
        texts.append(_json(content))
    if isinstance(parts, list):
        found, tool_result = _parts(parts, calls)
        texts.extend(found)
        if tool_result:
            role = "tool"
    tool_calls = item.get("tool_calls")
    if isinstance(tool_calls, list):
        calls = [*tool_calls, *calls]
    return Message(role, "\n".join(texts) if texts else None, _json(calls) if calls else None)


def messages_of(value: Any, default_role: str) -> list[Message]:
    """The messages of a ``gen_ai.*.messages`` attribute (JSON text, or a list from a foreign writer)."""
    if isinstance(value, (str, bytes)):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return [Message(default_role, value if isinstance(value, str) else value.decode("utf-8", "replace"), None)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        message = _message(item, default_role)
        if message is not None:
            out.append(message)
    return out


def _common_prefix(a: list[Message], b: list[Message]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x.key != y.key:
            break
        n += 1
    return n


def transcript(model_steps: list[Step], input_key: str, output_key: str) -> list[tuple[Step, str, int, Message]]:
    """The session's messages in order: (model step, ``in``/``out``, index in that list, message)."""
    out: list[tuple[Step, str, int, Message]] = []
    sent: list[Message] = []
    answered: list[Message] = []
    for step in model_steps:
        attrs = step.attributes
        inputs = messages_of(attrs.get(input_key), "user")
        outputs = messages_of(attrs.get(output_key), "assistant")
        start = 0
        if sent and _common_prefix(sent, inputs) == len(sent):
            start = len(sent)
            echoed = _common_prefix(answered, inputs[start:])
            start += echoed
        for index in range(start, len(inputs)):
            out.append((step, "in", index, inputs[index]))
        for index, message in enumerate(outputs):
            out.append((step, "out", index, message))
        sent, answered = inputs, outputs
    return out
