"""A recorded stream put back together: the JSON its events carry, and the whole answer they make.

An HTTP model step's stream is kept on the tape event by event, each with its offset and its exact
text, in its framing (``sse``, ``ndjson``, ``aws-eventstream``). Reading what the model said, or
comparing two recordings, wants the answer they add up to: the text joined, each tool call's
argument fragments joined, the stop reason. ``assemble`` builds that answer in the shape of the
provider's own non-streamed body, so one reader serves both.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

import orjson


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def event_payload(event: Mapping[str, Any], framing: str) -> Any:
    """The JSON one recorded event carries (None for a keep-alive, ``[DONE]`` or a non-JSON event)."""
    if framing == "aws-eventstream":
        payload = event.get("payload")
        if isinstance(payload, Mapping) and isinstance(payload.get("bytes"), str):  # invoke-with-response-stream
            try:
                return _json(base64.b64decode(payload["bytes"]).decode("utf-8"))
            except (binascii.Error, UnicodeDecodeError):
                return None
        return payload if isinstance(payload, Mapping) else None
    raw = event.get("text")
    if not isinstance(raw, str):
        return None
    if framing == "ndjson":
        return _json(raw.strip()) if raw.strip() else None
    data = "\n".join(line[5:].lstrip(" ") for line in raw.splitlines() if line.startswith("data:"))
    return None if not data or data == "[DONE]" else _json(data)


def payloads(result: Mapping[str, Any]) -> Iterator[Any]:
    """The JSON payloads of a recorded stream's events, in order."""
    framing = result.get("framing") if isinstance(result.get("framing"), str) else "sse"
    for event in result.get("events") or ():
        if isinstance(event, Mapping):
            payload = event_payload(event, str(framing))
            if payload is not None:
                yield payload


def is_stream(result: object) -> bool:
    """Whether a step's result is a recorded HTTP stream (``{"status", "headers", "events"}``)."""
    return isinstance(result, Mapping) and isinstance(result.get("events"), list) and "status" in result


def assemble(route: str, result: Mapping[str, Any]) -> Any:
    """The answer a recorded stream adds up to, shaped like the route's non-streamed body; for a route
    whose stream this module does not know, the list of its events' payloads."""
    return assemble_payloads(route, list(payloads(result)))


def assemble_payloads(route: str, events: list[Any]) -> Any:
    """The answer a list of stream payloads adds up to (Gemini answers a stream without ``alt=sse`` as
    one JSON array of them)."""
    for prefix, assembler in _ASSEMBLERS:
        if route.startswith(prefix):
            return assembler(events)
    return _by_sniffing(events)


def _by_sniffing(events: list[Any]) -> Any:
    first = next((e for e in events if isinstance(e, Mapping)), {})
    if first.get("object") == "chat.completion.chunk":
        return _openai_chat(events)
    if str(first.get("type", "")).startswith("response."):
        return _openai_responses(events)
    if first.get("type") == "message_start":
        return _anthropic(events)
    return events


def _openai_chat(events: list[Any]) -> dict[str, Any]:
    choices: dict[int, dict[str, Any]] = {}
    body: dict[str, Any] = {"object": "chat.completion"}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        for key in ("model", "usage"):
            if event.get(key) is not None:
                body[key] = event[key]
        for choice in event.get("choices") or ():
            index = choice.get("index", 0)
            slot = choices.setdefault(index, {"index": index, "message": {"role": "assistant"}, "calls": {}})
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                slot["message"]["content"] = slot["message"].get("content", "") + delta["content"]
            if isinstance(delta.get("refusal"), str):
                slot["message"]["refusal"] = slot["message"].get("refusal", "") + delta["refusal"]
            for call in delta.get("tool_calls") or ():
                have = slot["calls"].setdefault(call.get("index", 0), {"type": "function", "function": {}})
                if call.get("id"):
                    have["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    have["function"]["name"] = function["name"]
                if isinstance(function.get("arguments"), str):
                    have["function"]["arguments"] = have["function"].get("arguments", "") + function["arguments"]
            if choice.get("finish_reason"):
                slot["finish_reason"] = choice["finish_reason"]
    out = []
    for index in sorted(choices):
        slot = choices[index]
        calls = slot.pop("calls")
        if calls:
            slot["message"]["tool_calls"] = [calls[k] for k in sorted(calls)]
        out.append(slot)
    body["choices"] = out
    return body


_RESPONSE_DONE = ("response.completed", "response.incomplete", "response.failed")


def _openai_responses(events: list[Any]) -> Any:
    for event in reversed(events):
        done = isinstance(event, Mapping) and event.get("type") in _RESPONSE_DONE
        if done and isinstance(event.get("response"), Mapping):
            return event["response"]
    said = "".join(
        str(e.get("delta", ""))
        for e in events
        if isinstance(e, Mapping) and e.get("type") == "response.output_text.delta"
    )
    return {
        "object": "response",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": said}]}],
    }


def _anthropic(events: list[Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "message", "role": "assistant", "content": []}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            start = event["message"]
            message.update({k: v for k, v in start.items() if k != "content"})
        elif kind == "content_block_start":
            blocks[int(event.get("index", 0))] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            index = int(event.get("index", 0))
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            if isinstance(event.get("usage"), Mapping):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
    for index, text in partial.items():
        parsed = _json(text) if text else {}
        blocks[index]["input"] = parsed if parsed is not None else text
    message["content"] = [blocks[k] for k in sorted(blocks)]
    return message


def _bedrock_converse(events: list[Any]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    body: dict[str, Any] = {"output": {"message": {"role": "assistant", "content": []}}}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        index = int(event.get("contentBlockIndex", 0))
        if isinstance(event.get("start"), Mapping) and isinstance(event["start"].get("toolUse"), Mapping):
            blocks[index] = {"toolUse": dict(event["start"]["toolUse"])}
        elif isinstance(event.get("delta"), Mapping):
            delta = event["delta"]
            if isinstance(delta.get("text"), str):
                block = blocks.setdefault(index, {"text": ""})
                block["text"] = block.get("text", "") + delta["text"]
            elif isinstance(delta.get("toolUse"), Mapping):
                partial[index] = partial.get(index, "") + str(delta["toolUse"].get("input", ""))
        elif isinstance(event.get("stopReason"), str):
            body["stopReason"] = event["stopReason"]
        elif isinstance(event.get("usage"), Mapping):
            body["usage"] = event["usage"]
    for index, text in partial.items():
        if "toolUse" in blocks.get(index, {}):
            parsed = _json(text) if text else {}
            blocks[index]["toolUse"]["input"] = parsed if parsed is not None else text
    body["output"]["message"]["content"] = [blocks[k] for k in sorted(blocks)]
    return body


def _ollama(events: list[Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    body: dict[str, Any] = {}
    said = ""
    for event in events:
        if not isinstance(event, Mapping):
            continue
        inner = event.get("message")
        if isinstance(inner, Mapping):
            message["content"] += str(inner.get("content") or "")
            if inner.get("tool_calls"):
                message.setdefault("tool_calls", []).extend(inner["tool_calls"])
        if isinstance(event.get("response"), str):
            said += event["response"]
        for key in ("model", "done_reason"):
            if event.get(key):
                body[key] = event[key]
    if said:
        body["response"] = said
    else:
        body["message"] = message
    return body


def _gemini(events: list[Any]) -> dict[str, Any]:
    candidates: dict[int, dict[str, Any]] = {}
    body: dict[str, Any] = {}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        if isinstance(event.get("usageMetadata"), Mapping):
            body["usageMetadata"] = event["usageMetadata"]
        for candidate in event.get("candidates") or ():
            index = int(candidate.get("index", 0))
            slot = candidates.setdefault(index, {"index": index, "content": {"role": "model", "parts": []}})
            parts = slot["content"]["parts"]
            for part in (candidate.get("content") or {}).get("parts") or ():
                if isinstance(part.get("text"), str) and parts and isinstance(parts[-1].get("text"), str):
                    parts[-1] = {**parts[-1], "text": parts[-1]["text"] + part["text"]}
                else:
                    parts.append(dict(part))
            if candidate.get("finishReason"):
                slot["finishReason"] = candidate["finishReason"]
    body["candidates"] = [candidates[k] for k in sorted(candidates)]
    return body


def _cohere(events: list[Any]) -> dict[str, Any]:
    said = ""
    calls: list[dict[str, Any]] = []
    body: dict[str, Any] = {}
    for event in events:
        if not isinstance(event, Mapping):
            continue
        message = ((event.get("delta") or {}).get("message")) or {}
        kind = event.get("type")
        if kind == "content-delta":
            said += str(((message.get("content") or {}).get("text")) or "")
        elif kind == "tool-call-start" and isinstance(message.get("tool_calls"), Mapping):
            calls.append(dict(message["tool_calls"]))
        elif kind == "tool-call-delta" and calls and isinstance(message.get("tool_calls"), Mapping):
            piece = ((message["tool_calls"].get("function") or {}).get("arguments")) or ""
            function = calls[-1].setdefault("function", {})
            function["arguments"] = str(function.get("arguments", "")) + str(piece)
        elif kind == "message-end":
            body["finish_reason"] = (event.get("delta") or {}).get("finish_reason")
    content = [{"type": "text", "text": said}] if said else []
    body["message"] = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
    return body


def _bedrock_invoke(events: list[Any]) -> Any:
    return _by_sniffing(events)


_ASSEMBLERS = (
    ("openai.chat", _openai_chat),
    ("openai.responses", _openai_responses),
    ("anthropic.", _anthropic),
    ("bedrock.converse", _bedrock_converse),
    ("bedrock.invoke", _bedrock_invoke),
    ("ollama.", _ollama),
    ("gemini.", _gemini),
    ("cohere.", _cohere),
)
"""Stream assemblers by route name prefix (the first that matches)."""
