"""A fake Cohere v2 API on 127.0.0.1 in its wire format: JSON for ``/v2/chat`` and ``/v2/embed``,
and for ``"stream": true`` server-sent events named by type (``message-start``, ``content-start``,
``content-delta``, ``content-end``, ``message-end``) closed by ``data: [DONE]``.

The answer echoes the last user text (``You said: …``), so a changed prompt changes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from helpers.fake_api import FakeApi, Reply, Seen, json_reply, serve_api, words

CHAT_ID = "c0here-chat-1"
USAGE = {"billed_units": {"input_tokens": 5, "output_tokens": 4}, "tokens": {"input_tokens": 71, "output_tokens": 4}}


def _user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
            return str(content)
    return ""


def _events(answer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {"message": {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}
    yield "message-start", {"id": CHAT_ID, "type": "message-start", "delta": start}
    block = {"message": {"content": {"type": "text", "text": ""}}}
    yield "content-start", {"type": "content-start", "index": 0, "delta": block}
    for word in words(answer):
        yield "content-delta", {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": word}}}}
    yield "content-end", {"type": "content-end", "index": 0}
    yield "message-end", {"type": "message-end", "delta": {"finish_reason": "COMPLETE", "usage": USAGE}}


def _answer(seen: Seen) -> Reply:
    body = seen.body or {}
    if seen.path == "/v2/chat":
        answer = f"You said: {_user_text(body)}"
        if body.get("stream") is True:
            chunks = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in _events(answer)]
            chunks.append(b"data: [DONE]\n\n")
            return Reply(200, "text/event-stream", chunks, streamed=True)
        message = {"role": "assistant", "content": [{"type": "text", "text": answer}]}
        return json_reply(200, {"id": CHAT_ID, "message": message, "finish_reason": "COMPLETE", "usage": USAGE})
    if seen.path == "/v2/embed":
        texts = body.get("texts") or []
        vectors = [[round(len(t) / 10 + k / 100, 4) for k in range(4)] for t in texts]
        meta = {"api_version": {"version": "2"}, "billed_units": {"input_tokens": len(texts)}}
        payload = {"id": "c0here-embed-1", "embeddings": {"float": vectors}, "texts": texts, "meta": meta}
        return json_reply(200, {**payload, "response_type": "embeddings_by_type"})
    return json_reply(404, {"message": f"no route {seen.path}"})


@contextmanager
def fake_cohere() -> Iterator[FakeApi]:
    """The fake Cohere API for the block (``FakeApi.url`` is the client's ``base_url``)."""
    with serve_api(_answer) as api:
        yield api
