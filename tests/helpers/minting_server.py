"""A fake OpenAI and Anthropic provider on 127.0.0.1 that mints fresh ids on every answer, as the real
ones do: response ids, tool-call (``call_…``) and tool-use (``toolu_…``) ids, ``created``,
``system_fingerprint``, request-id and rate-limit headers. JSON and SSE, tool calls included (streamed
tool arguments arrive in fragments).

The model asks for the first tool offered with ``{"city": <the last word of the last user text>}``
until the conversation holds a tool result; then it answers with the tool's results. So the same
prompt gives the same behaviour with different ids, and a changed prompt changes the tool argument.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class MintingProvider:
    url: str
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"


def _fresh(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def _tool_results(body: dict[str, Any]) -> list[str]:
    found = []
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            found.append(str(message.get("content")))
        for part in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                found.append(str(part.get("content")))
    return found


def _first_user_city(body: dict[str, Any]) -> str:
    words = _user_text(body).rstrip("?.!").split()
    return words[-1] if words else "nowhere"


def _tool(body: dict[str, Any]) -> str | None:
    tools = body.get("tools") or []
    if not tools or _tool_results(body):
        return None
    first = tools[0]
    return str((first.get("function") or {}).get("name") or first.get("name"))


def _answer(body: dict[str, Any]) -> str:
    return "It is " + "; ".join(_tool_results(body)) + "."


def openai_json(body: dict[str, Any]) -> dict[str, Any]:
    tool = _tool(body)
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if tool:
        arguments = json.dumps({"city": _first_user_city(body)})
        message["tool_calls"] = [
            {"id": _fresh("call_"), "type": "function", "function": {"name": tool, "arguments": arguments}}
        ]
    else:
        message["content"] = _answer(body)
    return {
        "id": _fresh("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time() * 1000),
        "model": body.get("model"),
        "system_fingerprint": _fresh("fp_"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 9,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 16},
        },
    }


def openai_chunks(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    base = {
        "id": _fresh("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time() * 1000),
        "model": body.get("model"),
        "system_fingerprint": _fresh("fp_"),
    }
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    tool = _tool(body)
    if tool:
        arguments = json.dumps({"city": _first_user_city(body)})
        head = {"index": 0, "id": _fresh("call_"), "type": "function", "function": {"name": tool, "arguments": ""}}
        yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}, "finish_reason": None}]}
        for at in range(0, len(arguments), 5):
            piece = {"index": 0, "function": {"arguments": arguments[at : at + 5]}}
            yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": None}]}
    else:
        for word in _answer(body).split(" "):
            yield {**base, "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if tool else "stop"}]}


def anthropic_json(body: dict[str, Any]) -> dict[str, Any]:
    tool = _tool(body)
    content: list[dict[str, Any]]
    if tool:
        content = [
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": _fresh("toolu_"), "name": tool, "input": {"city": _first_user_city(body)}},
        ]
    else:
        content = [{"type": "text", "text": _answer(body)}]
    return {
        "id": _fresh("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 30,
            "output_tokens": 12,
            "cache_creation_input_tokens": 25,
            "cache_read_input_tokens": 0,
        },
    }


def anthropic_events(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    whole = anthropic_json(body)
    start = {**whole, "content": [], "stop_reason": None, "usage": {"input_tokens": 30, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
            for word in block["text"].split(" "):
                delta = {"type": "text_delta", "text": word + " "}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        else:
            opened = {**block, "input": {}}
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}
            text = json.dumps(block["input"])
            for at in range(0, len(text), 6):
                delta = {"type": "input_json_delta", "partial_json": text[at : at + 6]}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 12}}
    yield "message_stop", {"type": "message_stop"}


def _handler(provider: MintingProvider) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _head(self, content_type: str, length: int | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            if length is not None:
                self.send_header("Content-Length", str(length))
            self.send_header("x-request-id", _fresh("req_"))
            self.send_header("request-id", _fresh("req_"))
            self.send_header("openai-processing-ms", str(int(time.time() * 1000) % 997))
            self.send_header("x-ratelimit-remaining-requests", str(int(time.time() * 1000) % 9973))
            self.send_header("anthropic-ratelimit-requests-remaining", str(int(time.time() * 1000) % 9967))
            self.end_headers()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            path = self.path.split("?")[0]
            provider.requests.append((path, body))
            anthropic = path.endswith("/v1/messages")
            if body.get("stream") is True:
                self._head("text/event-stream; charset=utf-8")
                if anthropic:
                    events = [(name, json.dumps(data)) for name, data in anthropic_events(body)]
                else:
                    events = [(None, json.dumps(c)) for c in openai_chunks(body)] + [(None, "[DONE]")]
                for name, data in events:
                    self.wfile.write(((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode())
                    self.wfile.flush()
                    time.sleep(0.001)
                self.close_connection = True
                return
            data = json.dumps(anthropic_json(body) if anthropic else openai_json(body)).encode()
            self._head("application/json", len(data))
            self.wfile.write(data)

    return Handler


@contextmanager
def minting_provider() -> Iterator[MintingProvider]:
    """The fake on a free loopback port for the block."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(MintingProvider("")))
    provider = MintingProvider(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(provider)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
