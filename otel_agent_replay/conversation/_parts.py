"""Messages in the GenAI semantic conventions' shape: ``{"role": ..., "parts": [...]}``.

The conventions (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``)
describe a message as a role (``system``, ``user``, ``assistant``, ``tool``) and a list of typed parts:
``text`` (``content``), ``tool_call`` (``id``, ``name``, ``arguments``), ``tool_call_response``
(``id``, ``response``), ``reasoning`` (``content``), ``blob``/``uri``/``file`` for media, and any other
``type`` as a generic part. This module builds those parts from the blocks every provider uses, and
reads messages written in older spellings (``text`` in a text part, ``result`` in a tool response,
chat messages with ``content`` and ``tool_calls``) into the current one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

Part = dict[str, Any]
Message = dict[str, Any]

ROLES: Final = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "model": "assistant",
    "ai": "assistant",
    "chatbot": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}
"""Provider roles → the conventions' four."""


def role_of(value: object, default: str) -> str:
    """A provider's role as one of the conventions' roles."""
    return ROLES.get(value.lower(), default) if isinstance(value, str) else default


def text(content: str) -> Part:
    return {"type": "text", "content": content}


def arguments_of(value: object) -> Any:
    """Tool-call arguments as JSON data: a JSON string (OpenAI's way) is parsed, anything else kept."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def tool_call(name: object, arguments: object, call_id: object = None) -> Part:
    part: Part = {"type": "tool_call", "name": str(name or "")}
    if isinstance(call_id, str) and call_id:
        part["id"] = call_id
    part["arguments"] = arguments_of(arguments)
    return part


def tool_response(response: object, call_id: object = None) -> Part:
    part: Part = {"type": "tool_call_response"}
    if isinstance(call_id, str) and call_id:
        part["id"] = call_id
    part["response"] = _plain_response(response)
    return part


def _plain_response(value: object) -> Any:
    """A tool result as sent: a list of text blocks reads as its text."""
    if isinstance(value, list) and value and all(isinstance(b, Mapping) and b.get("type") == "text" for b in value):
        return "\n".join(str(b.get("text", "")) for b in value)
    return value


def block_parts(block: object) -> list[Part]:
    """The parts of one content block, whatever provider wrote it (text, tool calls and results, media)."""
    if isinstance(block, str):
        return [text(block)] if block else []
    if not isinstance(block, Mapping):
        return []
    kind = block.get("type")
    # The conventions' own parts (current and older spellings)
    if kind == "text" and isinstance(block.get("content"), str) and "text" not in block:
        return [text(block["content"])]
    if kind == "tool_call":
        return [tool_call(block.get("name"), block.get("arguments"), block.get("id"))]
    if kind == "tool_call_response":
        return [tool_response(block.get("response", block.get("result")), block.get("id"))]
    if kind == "reasoning" and isinstance(block.get("content"), str):
        return [{"type": "reasoning", "content": block["content"]}]
    # Text blocks: OpenAI chat and responses, Anthropic, Cohere
    if kind in ("text", "input_text", "output_text") or (kind is None and isinstance(block.get("text"), str)):
        value = block.get("text")
        return [text(value)] if isinstance(value, str) else []
    if kind == "refusal" and isinstance(block.get("refusal"), str):
        return [text(block["refusal"])]
    # Anthropic
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return [tool_call(block.get("name"), block.get("input"), block.get("id"))]
    if kind in ("tool_result", "mcp_tool_result"):
        return [tool_response(block.get("content"), block.get("tool_use_id"))]
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return [{"type": "reasoning", "content": block["thinking"]}]
    # OpenAI responses items
    if kind == "function_call":
        return [tool_call(block.get("name"), block.get("arguments"), block.get("call_id"))]
    if kind == "function_call_output":
        return [tool_response(arguments_of(block.get("output")), block.get("call_id"))]
    if kind == "reasoning":
        summary = block.get("summary") or []
        said = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
        return [{"type": "reasoning", "content": said}] if said else []
    if kind == "message":
        return [p for inner in block.get("content") or () for p in block_parts(inner)]
    # Gemini parts
    if isinstance(block.get("functionCall"), Mapping):
        call = block["functionCall"]
        return [tool_call(call.get("name"), call.get("args"), call.get("id"))]
    if isinstance(block.get("functionResponse"), Mapping):
        answer = block["functionResponse"]
        return [tool_response(answer.get("response"), answer.get("id"))]
    # Bedrock converse blocks
    if isinstance(block.get("toolUse"), Mapping):
        use = block["toolUse"]
        return [tool_call(use.get("name"), use.get("input"), use.get("toolUseId"))]
    if isinstance(block.get("toolResult"), Mapping):
        answer = block["toolResult"]
        content = [c.get("json", c.get("text")) if isinstance(c, Mapping) else c for c in answer.get("content") or ()]
        return [tool_response(content[0] if len(content) == 1 else content, answer.get("toolUseId"))]
    if isinstance(block.get("reasoningContent"), Mapping):
        thought = (block["reasoningContent"].get("reasoningText") or {}).get("text")
        return [{"type": "reasoning", "content": thought}] if isinstance(thought, str) else []
    # Media: kept as a generic part that names its type, never its bytes
    if isinstance(kind, str):
        return [{"type": kind}]
    return []


def chat_message(item: object, default_role: str) -> Message | None:
    """One chat message (OpenAI, Anthropic, Cohere, Ollama, Gemini, Bedrock, or already in the conventions' shape)."""
    if not isinstance(item, Mapping):
        return None
    if item.get("type") in ("function_call", "function_call_output", "reasoning"):  # a Responses API item
        role = "tool" if item.get("type") == "function_call_output" else "assistant"
        return {"role": role, "parts": block_parts(item)}
    role = role_of(item.get("role"), default_role)
    parts: list[Part] = []
    content = item.get("content")
    if isinstance(content, str):
        if content:
            parts.append(text(content))
    elif isinstance(content, list):
        for block in content:
            parts.extend(block_parts(block))
    elif isinstance(content, Mapping):
        parts.extend(block_parts(content))
    for block in item.get("parts") or ():  # the conventions' own shape, and Gemini's
        parts.extend(block_parts(block))
    for call in item.get("tool_calls") or ():
        if isinstance(call, Mapping):
            inner = call.get("function")
            function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
            parts.append(tool_call(function.get("name"), function.get("arguments"), call.get("id")))
    if role == "tool" and item.get("tool_call_id") is not None:
        response = content if isinstance(content, str) else [p.get("content", p) for p in parts]
        parts = [tool_response(arguments_of(response), item.get("tool_call_id"))]
    if role == "user" and parts and all(p["type"] == "tool_call_response" for p in parts):
        role = "tool"
    message: Message = {"role": role, "parts": parts}
    if isinstance(item.get("name"), str) and role != "tool":
        message["name"] = item["name"]
    return message


def chat_messages(items: object, default_role: str) -> list[Message]:
    """A list of chat messages in the conventions' shape (items that are not messages are skipped)."""
    if isinstance(items, Mapping):
        items = [items]
    if not isinstance(items, list):
        return []
    out = []
    for item in items:
        message = chat_message(item, default_role)
        if message is not None:
            out.append(message)
    return out


def instructions(value: object) -> list[Part]:
    """System instructions (a string, a list of blocks, or Gemini's ``{"parts": [...]}``) as parts."""
    if isinstance(value, Mapping):
        value = value.get("parts", value.get("content"))
    if isinstance(value, str):
        return [text(value)] if value else []
    if isinstance(value, list):
        return [p for block in value for p in block_parts(block)]
    return []


def dumps(value: Any) -> str:
    """Compact JSON text, as the span attributes hold it."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
