"""``gen_ai.input.messages`` / ``gen_ai.output.messages`` of the other providers' routes, recorded with their
real SDKs against the fakes in tests/helpers (Gemini, Ollama, Cohere; JSON and streamed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import cohere
import ollama
import orjson
import pytest
from google import genai
from google.genai import types
from helpers.cohere_server import fake_cohere
from helpers.fake_api import FakeApi
from helpers.gemini_server import fake_gemini
from helpers.ollama_server import fake_ollama
from helpers.rawtape import raw_spans

from otel_agent_replay import agent_run, record
from otel_agent_replay.core import attributes as A

KEY = "key-Secret0123456789abcdefghij"
ASKED = "Weather in Paris?"


def _gemini(api: FakeApi, stream: bool) -> None:
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=api.url))
    if stream:
        list(client.models.generate_content_stream(model="gemini-test", contents=ASKED))
    else:
        client.models.generate_content(model="gemini-test", contents=ASKED)


def _ollama(api: FakeApi, stream: bool) -> None:
    messages = [{"role": "user", "content": ASKED}]
    if stream:
        list(ollama.Client(host=api.url).chat(model="llama-test", messages=messages, stream=True))
    else:
        ollama.Client(host=api.url).chat(model="llama-test", messages=messages)


def _cohere(api: FakeApi, stream: bool) -> None:
    client = cohere.ClientV2(api_key=KEY, base_url=api.url)
    messages: Any = [{"role": "user", "content": ASKED}]
    if stream:
        list(client.chat_stream(model="command-test", messages=messages))
    else:
        client.chat(model="command-test", messages=messages)


CASES: list[tuple[str, Callable[[], Any], Callable[[FakeApi, bool], None]]] = [
    ("gemini", fake_gemini, _gemini),
    ("ollama", fake_ollama, _ollama),
    ("cohere", fake_cohere, _cohere),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("name", "server", "call"), CASES, ids=[c[0] for c in CASES])
def test_each_providers_model_step_holds_the_conversation(
    tape: Path, name: str, server: Callable[[], Any], call: Callable[[FakeApi, bool], None], stream: bool
) -> None:
    with server() as api, record(tape), agent_run(name):
        call(api, stream)
    (step,) = [s.attrs for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert orjson.loads(step[A.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": ASKED}]}
    ]
    (said,) = orjson.loads(step[A.GEN_AI_OUTPUT_MESSAGES])
    assert said["role"] == "assistant"
    texts = [p["content"] for p in said["parts"] if p["type"] == "text"]
    assert "".join(texts).strip() == f"You said: {ASKED}"  # the fakes echo; a stream's pieces joined
