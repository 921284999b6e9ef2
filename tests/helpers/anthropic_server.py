"""A fake Anthropic Messages API on 127.0.0.1 that speaks the real wire format, for agents that are not ours
(the ``claude`` CLI the Claude Agent SDK drives).

- ``POST /v1/messages`` (any query, ``?beta=true`` as the CLI sends it): JSON, or with ``"stream": true``
  server-sent events as the API sends them (``message_start``, ``content_block_start``, ``ping``,
  ``content_block_delta`` (``text_delta``, ``input_json_delta``), ``content_block_stop``,
  ``message_delta`` with the stop reason and output tokens, ``message_stop``), chunked, one event per
  chunk. A request that offers a tool named ``…{tool}`` and holds no ``tool_result`` yet is answered
  with a short text and a ``tool_use`` block of that tool (``{"city": "Paris"}``, stop reason
  ``tool_use``); once the conversation holds the tool's result, with a final text that quotes it. A
  request that asks for JSON output (``output_config.format``, as the CLI's session-title call does)
  gets a JSON object with a ``title``; anything else a plain text answer.
- ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}``.
- Anything else: the API's 404 error body (``not_found_error``); ``HEAD`` the same status, no body.

Message and tool-use ids are minted per call (``msg_01…``, ``toolu_01…``) as the real API mints them;
token counts follow the request's size. Every request is counted (``AnthropicApi.requests``).
"""

from __future__ import annotations

import http.server
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from helpers.loopback import serve_on_loopback


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class AnthropicApi:
    url: str
    tool: str = "get_weather"
    requests: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def messages(self) -> list[Seen]:
        """The ``/v1/messages`` calls received."""
        with self.lock:
            return [seen for seen in self.requests if seen.path.split("?")[0] == "/v1/messages"]


def _minted(prefix: str) -> str:
    return prefix + "01" + secrets.token_hex(11)


def _tool_result(body: dict[str, Any]) -> str | None:
    for message in body.get("messages") or ():
        for part in message.get("content") or ():
            if isinstance(part, dict) and part.get("type") == "tool_result":
                content = part.get("content")
                if isinstance(content, list):
                    return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
                return str(content)
    return None


def _blocks(api: AnthropicApi, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The answer's content blocks and stop reason."""
    result = _tool_result(body)
    tools = [str(t.get("name")) for t in body.get("tools") or () if str(t.get("name", "")).endswith(api.tool)]
    if result is not None:
        return [{"type": "text", "text": f"The weather tool says: {result}"}], "end_turn"
    if tools:
        use = {"type": "tool_use", "id": _minted("toolu_"), "name": tools[0], "input": {"city": "Paris"}}
        return [{"type": "text", "text": "Let me check the weather."}, use], "tool_use"
    if (body.get("output_config") or {}).get("format"):
        return [{"type": "text", "text": json.dumps({"title": "Weather in Paris"})}], "end_turn"
    return [{"type": "text", "text": "Hello from the fake Messages API."}], "end_turn"


def _usage(body: dict[str, Any], output: int) -> dict[str, Any]:
    return {
        "input_tokens": max(1, len(json.dumps(body.get("messages"))) // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
        "service_tier": "standard",
    }


def _message(body: dict[str, Any], content: list[dict[str, Any]], stop: str | None, output: int) -> dict[str, Any]:
    return {
        "id": _minted("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(body, output),
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def events(api: AnthropicApi, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE events of one streamed answer, as the API sends them."""
    blocks, stop = _blocks(api, body)
    yield "message_start", {"type": "message_start", "message": _message(body, [], None, 1)}
    output = 0
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], 8)]
        else:
            start = {**block, "input": {}}
            text = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(text, 6)]]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        if index == 0:
            yield "ping", {"type": "ping"}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        output += len(deltas)
    delta = {"stop_reason": stop, "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": output}}
    yield "message_stop", {"type": "message_stop"}


def _handler(api: AnthropicApi) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _take(self) -> dict[str, Any]:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            with api.lock:
                api.requests.append(seen)
            return body if isinstance(body, dict) else {}

        def _head(self, status: int, content_type: str, length: int | None) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("request-id", _minted("req_"))
            self.send_header("anthropic-organization-id", "00000000-0000-4000-8000-000000000000")
            if length is None:
                self.send_header("transfer-encoding", "chunked")
                self.send_header("cache-control", "no-cache")
            else:
                self.send_header("content-length", str(length))
            self.end_headers()

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self._head(status, "application/json", len(data))
            if self.command != "HEAD":
                self.wfile.write(data)

        def _sse(self, body: dict[str, Any]) -> None:
            self._head(200, "text/event-stream; charset=utf-8", None)
            for name, data in events(api, body):
                text = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(text), text))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _not_found(self) -> None:
            error = {"type": "not_found_error", "message": f"{self.command} {self.path.split('?')[0]}: not found"}
            self._json(404, {"type": "error", "error": error})

        def do_POST(self) -> None:
            body = self._take()
            path = self.path.split("?")[0]
            if path == "/v1/messages" and body.get("stream") is True:
                self._sse(body)
            elif path == "/v1/messages":
                blocks, stop = _blocks(api, body)
                self._json(200, _message(body, blocks, stop, 12))
            elif path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": _usage(body, 0)["input_tokens"]})
            else:
                self._not_found()

        def do_GET(self) -> None:
            self._take()
            self._not_found()

        do_HEAD = do_GET

    return Handler


@contextmanager
def anthropic_api(tool: str = "get_weather") -> Iterator[AnthropicApi]:
    """The fake Messages API on a free loopback port for the block; its port is closed after it."""
    api = AnthropicApi("", tool)
    with serve_on_loopback(_handler(api)) as url:
        api.url = url
        yield api
