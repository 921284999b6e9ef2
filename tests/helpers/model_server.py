"""A fake model provider on 127.0.0.1 speaking the OpenAI and Anthropic wire formats (JSON and SSE).

Answers are deterministic and echo the last user message, so a changed prompt changes the answer.
A request whose ``model`` is ``rate-limited`` gets the provider's 429 error body; ``flaky-once``
gets a 500 when it is the provider's first request, then answers; a model named ``tiny…``
(``tiny-deltas``) streams its answer (chat, responses, Anthropic) in 4-character deltas with no
pause, and one named ``…bare…`` answers the user's text alone (no space of its own). Every request
is counted (``FakeProvider.requests``), with its headers, so a test can prove a replay sent none.

A quiz: a chat completion whose last user message starts ``quiz case=C version=V`` is answered
``right`` or ``wrong`` when ``FakeProvider.odds`` has ``(C, V)``: a probability (the n-th question
of that case and version is right when ``Random(f"{seed}|{C}|{V}|{n}").random()`` is below it, so a
run of k questions gives the same answers in any order, from any number of processes) or a
pattern such as ``"yynyn"`` (the n-th answer is ``pattern[n % len]``). A quiz that offers tools is a
tool loop: it is answered with calls of the tools first, and draws its answer once the tools answered.
``latency`` delays every quiz answer; ``max_in_flight`` is the most quiz questions answered at once.
"""

from __future__ import annotations

import base64
import http.server
import json
import random
import re
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

CREATED = 1_764_547_200


_QUIZ = re.compile(r"^quiz case=([^\s:]+) version=([^\s:]+)")


@dataclass
class FakeProvider:
    url: str
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    odds: dict[tuple[str, str], float | str] = field(default_factory=dict)
    seed: int = 0
    latency: float = 0.0
    draws: dict[tuple[str, str], int] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def quiz(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to a quiz question (see the module's docstring), or None when it is not one."""
        match = _QUIZ.match(_last_user_text(body))
        key = (match.group(1), match.group(2)) if match else None
        if key is None or key not in self.odds or _wants_tool(body):
            return None  # a quiz that offers tools asks for them first (a tool loop), then draws its answer
        odds = self.odds[key]
        with self.lock:
            n = self.draws.get(key, 0)
            self.draws[key] = n + 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                time.sleep(self.latency)
            if isinstance(odds, str):
                right = odds[n % len(odds)] == "y"
            else:
                right = random.Random(f"{self.seed}|{key[0]}|{key[1]}|{n}").random() < odds
        finally:
            with self.lock:
                self.in_flight -= 1
        answer = chat_completion({**body, "tools": None})
        answer["choices"][0]["message"]["content"] = "right" if right else "wrong"
        return answer


def _last_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    value = body.get("input")
    return value if isinstance(value, str) else json.dumps(value)


def _answer(body: dict[str, Any]) -> str:
    if "bare" in str(body.get("model", "")):  # model "tiny-bare": the user's text alone, with no space added
        return _last_user_text(body)
    return f"You said: {_last_user_text(body)}"


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]


def _pieces(body: dict[str, Any], text: str) -> list[str]:
    """A streamed answer's deltas: words, or for a model named ``tiny…`` 4-character pieces."""
    if "tiny" in str(body.get("model", "")):
        return [text[i : i + 4] for i in range(0, len(text), 4)]
    return _words(text)


def _wants_tool(body: dict[str, Any]) -> bool:
    """Call the first tool offered unless the conversation already holds a tool result."""
    if not body.get("tools"):
        return False
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            return False
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
            return False
    return True


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", {}).get("name") or tool.get("name"))


def _tool_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments that fit a tool's JSON schema: "Paris" for strings, 1 for numbers, true for booleans."""
    schema = tool.get("function", {}).get("parameters") or tool.get("input_schema") or tool.get("parameters") or {}
    values = {"string": "Paris", "integer": 1, "number": 1, "boolean": True}
    return {name: values.get(str(prop.get("type")), "Paris") for name, prop in (schema.get("properties") or {}).items()}


def _tool_results(body: dict[str, Any]) -> list[str]:
    found = []
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            found.append(str(message.get("content")))
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "tool_result":
                    found.append(json.dumps(part.get("content")))
    return found


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    model = body.get("model", "gpt-test")
    message: dict[str, Any]
    if _wants_tool(body):
        calls = [
            {
                "id": f"call_{i + 1}",
                "type": "function",
                "function": {"name": _tool_name(tool), "arguments": json.dumps(_tool_arguments(tool))},
            }
            for i, tool in enumerate(body["tools"])
        ]
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": calls}
        finish = "tool_calls"
    else:
        results = _tool_results(body)
        text = f"The tools said {'; '.join(results)}" if results else _answer(body)
        message = {"role": "assistant", "content": text, "refusal": None}
        finish = "stop"
    return {
        "id": "chatcmpl-fake1",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }


def chat_chunks(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    model = body.get("model", "gpt-test")
    base = {"id": "chatcmpl-fake2", "object": "chat.completion.chunk", "created": CREATED, "model": model}
    first = {"role": "assistant", "content": ""}
    yield {**base, "choices": [{"index": 0, "delta": first, "finish_reason": None}]}
    answer = _answer(body)
    # model "tiny-deltas": 4-character deltas, so a token in the answer is split across many events
    pieces = _pieces(body, answer)
    for word in pieces:
        yield {**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
    yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}


def response_object(body: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    text = _answer(body)
    return {
        "id": "resp_fake1",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": body.get("model", "gpt-test"),
        "output": [
            {
                "type": "message",
                "id": "msg_fake1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 9,
            "output_tokens": 4,
            "total_tokens": 13,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def response_events(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    created = response_object(body, "in_progress")
    created["output"] = []
    seq = 0
    yield "response.created", {"type": "response.created", "sequence_number": seq, "response": created}
    for word in _pieces(body, _answer(body)):
        seq += 1
        yield (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "sequence_number": seq,
                "item_id": "msg_fake1",
                "output_index": 0,
                "content_index": 0,
                "delta": word,
                "logprobs": [],
            },
        )
    seq += 1
    done = response_object(body)
    yield "response.completed", {"type": "response.completed", "sequence_number": seq, "response": done}


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body.get("input")
    items = inputs if isinstance(inputs, list) else [inputs]
    data = []
    for i, item in enumerate(items):
        vector = [round(len(str(item)) / 10 + k / 100, 4) for k in range(4)]
        if body.get("encoding_format") == "base64":
            encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        else:
            encoded = vector
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": body.get("model"),
        "usage": {"prompt_tokens": 3, "total_tokens": 3},
    }


def anthropic_message(body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]]
    if _wants_tool(body):
        content = [
            {"type": "tool_use", "id": f"toolu_{i + 1}", "name": _tool_name(tool), "input": _tool_arguments(tool)}
            for i, tool in enumerate(body["tools"])
        ]
        stop = "tool_use"
    else:
        results = _tool_results(body)
        content = [{"type": "text", "text": f"The tools said {'; '.join(results)}" if results else _answer(body)}]
        stop = "end_turn"
    return {
        "id": "msg_fake1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 6},
    }


def anthropic_events(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {**anthropic_message(body), "content": [], "stop_reason": None, "id": "msg_fake2"}
    start["usage"] = {"input_tokens": 11, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    block = {"type": "text", "text": ""}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "ping", {"type": "ping"}
    for word in _pieces(body, _answer(body)):
        delta = {"type": "text_delta", "text": word}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    stop = {"stop_reason": "end_turn", "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 6}}
    yield "message_stop", {"type": "message_stop"}


def _handler(provider: FakeProvider) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", "req_fake")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: Iterable[tuple[str | None, str]], gap: float = 0.002) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for i, (name, data) in enumerate(events):
                text = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
                self.wfile.write(text.encode())
                self.wfile.flush()
                if i < 5:
                    time.sleep(gap)  # the first events arrive apart, as from a model warming up
            self.close_connection = True

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            provider.requests.append((path, {k.lower(): v for k, v in self.headers.items()}, body))
            stream = body.get("stream") is True
            if body.get("model") == "flaky-once" and len(provider.requests) == 1:
                error = {"message": "The server had an error", "type": "server_error", "param": None, "code": None}
                self._json(500, {"error": error}, {"retry-after-ms": "1"})
            elif body.get("model") == "rate-limited":
                error = {"message": "Rate limit reached for requests", "type": "requests", "param": None}
                self._json(429, {"error": {**error, "code": "rate_limit_exceeded"}}, {"retry-after": "0"})
            elif path.endswith("/chat/completions") and not stream and (quiz := provider.quiz(body)) is not None:
                self._json(200, quiz)
            elif path.endswith("/chat/completions"):
                if stream:
                    chunks: list[tuple[str | None, str]] = [(None, json.dumps(c)) for c in chat_chunks(body)]
                    # model "slow-stream": events 50 ms apart, so an early stop surely has not got them all
                    gap = {"slow-stream": 0.05, "tiny-deltas": 0.0}.get(body.get("model"), 0.002)
                    self._sse(iter([*chunks, (None, "[DONE]")]), gap)
                else:
                    self._json(200, chat_completion(body))
            elif path.endswith("/responses"):
                if stream:
                    self._sse((name, json.dumps(data)) for name, data in response_events(body))
                else:
                    self._json(200, response_object(body))
            elif path.endswith("/embeddings"):
                self._json(200, embeddings(body))
            elif path.endswith("/v1/messages"):
                if stream:
                    self._sse((name, json.dumps(data)) for name, data in anthropic_events(body))
                else:
                    self._json(200, anthropic_message(body))
            else:
                self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    return Handler


@contextmanager
def fake_provider() -> Iterator[FakeProvider]:
    """A fake provider on a free loopback port for the block; stopped (port closed) after it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(FakeProvider("")))
    provider = FakeProvider(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(provider)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
