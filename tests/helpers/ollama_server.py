"""A fake Ollama server on 127.0.0.1 in its native wire format: compact JSON (as its Go server
writes it) for ``"stream": false``, and newline-delimited JSON (``application/x-ndjson``) otherwise,
since Ollama streams by default. Chat, generate, embed and the older embeddings endpoint.

The answer echoes the last user text (``You said: …``), so a changed prompt changes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from helpers.fake_api import FakeApi, Reply, Seen, json_reply, pieces, serve_api

CREATED_AT = "2026-12-01T00:00:00.000000Z"
COUNTS = {"prompt_eval_count": 26, "eval_count": 6}
_TIMINGS = {
    "total_duration": 5_191_566,
    "load_duration": 2_154,
    "prompt_eval_duration": 383_809,
    "eval_duration": 4_799,
}


def _user_text(body: dict[str, Any]) -> str:
    if "prompt" in body:
        return str(body["prompt"])
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def _part(path: str, model: str, text: str) -> dict[str, Any]:
    if path == "/api/chat":
        return {"model": model, "created_at": CREATED_AT, "message": {"role": "assistant", "content": text}}
    return {"model": model, "created_at": CREATED_AT, "response": text}


def _done(path: str, model: str, text: str) -> dict[str, Any]:
    last = {**_part(path, model, text), "done": True, "done_reason": "stop", **_TIMINGS, **COUNTS}
    if path == "/api/generate":
        last["context"] = [1, 2, 3]
    return last


def _vector(item: object) -> list[float]:
    return [round(len(str(item)) / 10 + k / 100, 4) for k in range(4)]


def _answer(seen: Seen) -> Reply:
    body = seen.body or {}
    model = str(body.get("model", ""))
    if seen.path in ("/api/chat", "/api/generate"):
        answer = f"You said: {_user_text(body)}"
        if body.get("stream") is False:
            return json_reply(200, _done(seen.path, model, answer), compact=True)
        lines = [{**_part(seen.path, model, word), "done": False} for word in pieces(model, answer)]
        lines.append(_done(seen.path, model, ""))
        chunks = [json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines]
        return Reply(200, "application/x-ndjson", chunks, streamed=True)
    if seen.path == "/api/embed":
        inputs = body.get("input")
        items = inputs if isinstance(inputs, list) else [inputs]
        payload = {"model": model, "embeddings": [_vector(i) for i in items], **_TIMINGS, "prompt_eval_count": 4}
        return json_reply(200, payload, compact=True)
    if seen.path == "/api/embeddings":
        return json_reply(200, {"embedding": _vector(body.get("prompt"))}, compact=True)
    return json_reply(404, {"error": f"no route {seen.path}"}, compact=True)


@contextmanager
def fake_ollama() -> Iterator[FakeApi]:
    """The fake Ollama server for the block (``FakeApi.url`` is the client's ``host``)."""
    with serve_api(_answer) as api:
        yield api
