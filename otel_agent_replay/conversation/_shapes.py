"""Each provider's request and answer, read as the conventions' messages, in one place.

A model step names its route (``openai.chat.completions``, ``anthropic.messages``, ``gemini.…``);
the shapes below are keyed by the route name's prefix. A decorated model function (any other name)
is read by the shape its arguments or result have. Every reader takes plain JSON (the redacted
arguments and result as the tape holds them) and never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._parts import Message, Part, block_parts, chat_message, chat_messages, instructions, text
from ._streams import assemble, assemble_payloads, is_stream


@dataclass(frozen=True, slots=True)
class Prompt:
    """What a model call was sent: its system instructions (parts) and its messages."""

    system: tuple[Part, ...]
    messages: tuple[Message, ...]


def _chat_prompt(args: Mapping[str, Any]) -> Prompt | None:
    """OpenAI chat, Mistral, Groq …, Cohere v2, Ollama chat, and Anthropic (``system`` beside ``messages``)."""
    if not isinstance(args.get("messages"), list):
        return None
    return Prompt(tuple(instructions(args.get("system"))), tuple(chat_messages(args["messages"], "user")))


def _responses_prompt(args: Mapping[str, Any]) -> Prompt | None:
    value = args.get("input")
    system = tuple(instructions(args.get("instructions")))
    if isinstance(value, str):
        return Prompt(system, ({"role": "user", "parts": [text(value)]},))
    if isinstance(value, list):
        return Prompt(system, tuple(chat_messages(value, "user")))
    return None


def _completion_prompt(args: Mapping[str, Any]) -> Prompt | None:
    value = args.get("prompt")
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    if not isinstance(value, str):
        return None
    return Prompt(tuple(instructions(args.get("system"))), ({"role": "user", "parts": [text(value)]},))


def _gemini_prompt(args: Mapping[str, Any]) -> Prompt | None:
    contents = args.get("contents")
    if isinstance(contents, Mapping):
        contents = [contents]
    if not isinstance(contents, list):
        return None
    system = args.get("systemInstruction", args.get("system_instruction"))
    return Prompt(tuple(instructions(system)), tuple(chat_messages(contents, "user")))


def _bedrock_prompt(args: Mapping[str, Any]) -> Prompt | None:
    found = _chat_prompt(args)  # converse, and Anthropic's body inside invoke
    return found if found is not None else _completion_prompt(args)


def _any_prompt(args: Mapping[str, Any]) -> Prompt | None:
    for reader in (_chat_prompt, _gemini_prompt, _responses_prompt, _completion_prompt):
        found = reader(args)
        if found is not None and found.messages:
            return found
    return None


def _embeddings(args: Mapping[str, Any]) -> Prompt | None:
    return None


_PROMPTS: tuple[tuple[str, Callable[[Mapping[str, Any]], Prompt | None]], ...] = (
    ("openai.embeddings", _embeddings),
    ("openai.chat", _chat_prompt),
    ("openai.responses", _responses_prompt),
    ("openai.completions", _completion_prompt),
    ("anthropic.", _chat_prompt),
    ("bedrock.", _bedrock_prompt),
    ("gemini.embed", _embeddings),
    ("gemini.", _gemini_prompt),
    ("ollama.embed", _embeddings),
    ("ollama.generate", _completion_prompt),
    ("ollama.", _chat_prompt),
    ("cohere.embed", _embeddings),
    ("cohere.", _chat_prompt),
)
"""The request readers by route name prefix (the first that matches); other names are read by shape."""


def prompt_of(route: str, args: object) -> Prompt | None:
    """What a model call was sent, or None when its arguments carry no messages."""
    if not isinstance(args, Mapping):
        return None
    for prefix, reader in _PROMPTS:
        if route.startswith(prefix):
            return reader(args)
    return _any_prompt(args)


# ---- answers ----


def _assistant(parts: list[Part]) -> Message:
    return {"role": "assistant", "parts": parts}


def _chat_answer(body: Mapping[str, Any]) -> list[Message] | None:
    choices = body.get("choices")
    if not isinstance(choices, list):
        return None
    out = []
    for choice in choices:
        if not isinstance(choice, Mapping):
            continue
        if isinstance(choice.get("message"), Mapping):
            message = chat_message(choice["message"], "assistant")
            if message is not None:
                out.append(message)
        elif isinstance(choice.get("role"), str):  # a choice that is the message itself
            message = chat_message(choice, "assistant")
            if message is not None:
                out.append(message)
        elif isinstance(choice.get("text"), str):  # legacy completions
            out.append(_assistant([text(choice["text"])]))
    return out


def _responses_answer(body: Mapping[str, Any]) -> list[Message] | None:
    output = body.get("output")
    if not isinstance(output, list):
        return None
    return [_assistant([p for item in output for p in block_parts(item)])]


def _anthropic_answer(body: Mapping[str, Any]) -> list[Message] | None:
    content = body.get("content")
    if body.get("type") != "message" and not (isinstance(content, list) and body.get("role") == "assistant"):
        return None
    return [_assistant([p for block in content or () for p in block_parts(block)])]


def _gemini_answer(body: Mapping[str, Any]) -> list[Message] | None:
    candidates = body.get("candidates")
    if not isinstance(candidates, list):
        return None
    out = []
    for candidate in candidates:
        content = candidate.get("content") if isinstance(candidate, Mapping) else None
        if isinstance(content, Mapping):
            out.append(_assistant([p for part in content.get("parts") or () for p in block_parts(part)]))
    return out


def _bedrock_answer(body: Mapping[str, Any]) -> list[Message] | None:
    output = body.get("output")
    if isinstance(output, Mapping) and isinstance(output.get("message"), Mapping):
        message = chat_message(output["message"], "assistant")
        return [message] if message is not None else []
    return _anthropic_answer(body)


def _ollama_answer(body: Mapping[str, Any]) -> list[Message] | None:
    if isinstance(body.get("message"), Mapping):
        message = chat_message(body["message"], "assistant")
        return [message] if message is not None else []
    if isinstance(body.get("response"), str):
        return [_assistant([text(body["response"])])]
    return None


def _cohere_answer(body: Mapping[str, Any]) -> list[Message] | None:
    return _ollama_answer(body)


def _any_answer(body: Mapping[str, Any]) -> list[Message] | None:
    for reader in (_chat_answer, _responses_answer, _anthropic_answer, _gemini_answer, _bedrock_answer, _ollama_answer):
        found = reader(body)
        if found:
            return found
    if isinstance(body.get("messages"), list):  # a decorated call returning the conversation
        return chat_messages(body["messages"][-1:], "assistant")
    return None


_ANSWERS: tuple[tuple[str, Callable[[Mapping[str, Any]], list[Message] | None]], ...] = (
    ("openai.chat", _chat_answer),
    ("openai.completions", _chat_answer),
    ("openai.responses", _responses_answer),
    ("anthropic.", _anthropic_answer),
    ("bedrock.", _bedrock_answer),
    ("gemini.", _gemini_answer),
    ("ollama.", _ollama_answer),
    ("cohere.", _cohere_answer),
)
"""The answer readers by route name prefix; other names are read by shape."""


def answer_body(route: str, result: object) -> Any:
    """A model step's answer as JSON: an HTTP step's body (a stream assembled), else the result itself."""
    if is_stream(result):
        return assemble(route, result)  # type: ignore[arg-type]
    if isinstance(result, Mapping) and isinstance(result.get("status"), int) and "headers" in result:
        body = result.get("body")
        if isinstance(body, list) and route.startswith("gemini."):  # a stream as one JSON array
            return assemble_payloads(route, body)
        return body
    return result


def answer_of(route: str, result: object) -> list[Message] | None:
    """What a model answered, as the conventions' output messages (None when the result holds none)."""
    body = answer_body(route, result)
    if isinstance(body, str):
        return [_assistant([text(body)])] if body else None
    if isinstance(body, list):
        found = chat_messages(body, "assistant")
        return found or None
    if not isinstance(body, Mapping) or isinstance(body.get("error"), Mapping):
        return None
    for prefix, reader in _ANSWERS:
        if route.startswith(prefix):
            return reader(body)
    return _any_answer(body)
