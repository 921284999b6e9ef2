"""A fake Gemini API (``/v1beta/models/{model}:…``) on 127.0.0.1, in the wire format of
generativelanguage.googleapis.com: camelCase JSON, and server-sent events (``data: …`` and a
``\\r\\n\\r\\n`` separator) for ``:streamGenerateContent?alt=sse``.

The answer echoes the last user text (``You said: …``), so a changed prompt changes it; the model
``rate-limited`` gets Gemini's 429 error body. A request that declares functions
(``tools[].functionDeclarations``) and whose last turn is the user's text is answered with a
``functionCall`` of the first one, each string parameter set to the user text's last word; once the
last turn carries the ``functionResponse``, the answer is text quoting it (``Done: …``), as an agent
loop (google-adk's) expects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from helpers.fake_api import FakeApi, Reply, Seen, json_reply, pieces, serve_api

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>\w+)$")
_MODELS = re.compile(r"/v1(?:beta|alpha)?/models$")
USAGE = {"promptTokenCount": 8, "candidatesTokenCount": 5, "totalTokenCount": 13}


def _user_text(body: dict[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        if content.get("role", "user") == "user":
            return "".join(str(part.get("text", "")) for part in content.get("parts") or [])
    return ""


def _chunk(model: str, text: str, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    usage = USAGE if last else {"promptTokenCount": 8, "totalTokenCount": 8}
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": f"{model}-001",
        "responseId": "gem-resp-1",
    }


def _declared(body: dict[str, Any]) -> dict[str, Any] | None:
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            return dict(declaration)
    return None


def _function_turn(model: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The answer of a request that declares functions: a call of the first one, or text about its response."""
    declaration = _declared(body)
    contents = body.get("contents") or []
    if declaration is None or not contents:
        return None
    last = contents[-1].get("parts") or []
    responses = [part["functionResponse"] for part in last if "functionResponse" in part]
    if responses:
        text = "Done: " + json.dumps(responses[0].get("response"), sort_keys=True)
        return _chunk(model, text, last=True)
    schema = (  # google-genai sends the JSON schema under its snake_case name, which the API reads too
        declaration.get("parameters")
        or declaration.get("parametersJsonSchema")
        or declaration.get("parameters_json_schema")
        or {}
    )
    word = (_user_text(body).split() or [""])[-1].strip(".?!")
    args = {
        name: word
        for name, prop in (schema.get("properties") or {}).items()
        if str(prop.get("type")).lower() == "string"
    }
    call = {"functionCall": {"name": declaration["name"], "args": args}}
    answer = _chunk(model, "", last=True)
    answer["candidates"][0]["content"]["parts"] = [call]
    return answer


def _answer(seen: Seen) -> Reply:
    if seen.method == "GET" and _MODELS.search(seen.path):
        return json_reply(200, {"models": [{"name": "models/gemini-test", "displayName": "Gemini Test"}]})
    found = _PATH.search(seen.path)
    if found is None or seen.method != "POST":
        return json_reply(404, {"error": {"code": 404, "message": f"no route {seen.path}", "status": "NOT_FOUND"}})
    model, method = found.group("model"), found.group("method")
    body = seen.body or {}
    if model == "rate-limited":
        error = {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
        }
        return json_reply(429, {"error": error})
    turn = _function_turn(model, body) if method == "generateContent" else None
    if turn is not None:
        return json_reply(200, turn)
    if method == "generateContent":
        text = json.dumps(_chunk(model, f"You said: {_user_text(body)}", last=True), indent=2) + "\n"
        return Reply(200, "application/json; charset=UTF-8", [text.encode()])  # indented, as Google writes it
    if method == "streamGenerateContent":
        parts = pieces(model, f"You said: {_user_text(body)}")
        events = [
            f"data: {json.dumps(_chunk(model, word, last=i == len(parts) - 1))}\r\n\r\n".encode()
            for i, word in enumerate(parts)
        ]
        return Reply(200, "text/event-stream", events, streamed=True)
    if method == "batchEmbedContents":
        vectors = [
            {"values": [round(len(json.dumps(r.get("content"))) / 100 + k / 10, 3) for k in range(3)]}
            for r in body.get("requests") or []
        ]
        return json_reply(200, {"embeddings": vectors})
    if method == "embedContent":
        return json_reply(200, {"embedding": {"values": [0.1, 0.2, 0.3]}})
    return json_reply(
        400, {"error": {"code": 400, "message": f"unknown method {method}", "status": "INVALID_ARGUMENT"}}
    )


@contextmanager
def fake_gemini() -> Iterator[FakeApi]:
    """The fake Gemini API for the block (base URL ``FakeApi.url``; the SDK adds ``/v1beta``)."""
    with serve_api(_answer) as api:
        yield api
