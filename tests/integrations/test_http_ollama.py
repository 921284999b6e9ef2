"""The real ``ollama`` client against a fake Ollama server on 127.0.0.1 (``tests/helpers/ollama_server.py``):
chat, streamed chat (newline-delimited JSON), generate and embeddings recorded over HTTP with no code
change, then replayed strictly with the server still up, and not one request reaches it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import ollama
import orjson
from helpers.fake_api import FakeApi
from helpers.ollama_server import fake_ollama
from helpers.rawtape import RawSpan, raw_spans

from otel_agent_replay import agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.replayer import ReplaySession

MODEL = "llama-test"
MESSAGES: list[Any] = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Weather in Paris?"}]
RESPONSE_KEYS = (
    A.GEN_AI_PROVIDER_NAME,
    A.GEN_AI_REQUEST_MODEL,
    A.GEN_AI_RESPONSE_MODEL,
    A.GEN_AI_RESPONSE_FINISH_REASONS,
    A.GEN_AI_USAGE_INPUT_TOKENS,
    A.GEN_AI_USAGE_OUTPUT_TOKENS,
    A.GEN_AI_REQUEST_STREAM,
)


def _model_spans(tape: Path) -> list[RawSpan]:
    return [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]


@contextmanager
def _replayed(tape: Path, name: str) -> Iterator[tuple[Path, ReplaySession]]:
    """A strict replay of ``tape`` whose own spans are recorded on a second tape (no model routes there)."""
    again = tape.with_name("replayed.jsonl")
    with record(again, http_models=False), replay(tape) as session, agent_run(name):
        yield again, session


def _sealed(session: ReplaySession, hits: int) -> None:
    stats = session.stats
    assert (stats.hits, stats.misses, stats.live_model_calls, stats.passthrough_requests) == (hits, 0, 0, 0)


def _same_attributes(recorded: RawSpan, served: RawSpan) -> None:
    assert recorded.name == served.name
    assert {k: served.attrs.get(k) for k in RESPONSE_KEYS} == {k: recorded.attrs[k] for k in RESPONSE_KEYS}


def test_chat_replays_strictly_with_the_server_up(tape: Path) -> None:
    with fake_ollama() as api:
        with record(tape), agent_run("ollama"):
            live = ollama.Client(host=api.url).chat(model=MODEL, messages=MESSAGES)
        with _replayed(tape, "ollama") as (again, session):
            replayed = ollama.Client(host=api.url).chat(model=MODEL, messages=MESSAGES)
        assert api.paths == ["/api/chat"]  # the server was up; the replay sent nothing
    _sealed(session, 1)
    assert isinstance(replayed, ollama.ChatResponse) and replayed == live
    assert replayed.message.content == "You said: Weather in Paris?"
    (recorded,) = _model_spans(tape)
    (served,) = _model_spans(again)
    attrs = recorded.attrs
    assert recorded.name == f"chat {MODEL}"
    assert attrs["agent_replay.function"] == "ollama.chat"
    assert attrs[A.GEN_AI_PROVIDER_NAME] == "ollama"
    assert attrs[A.GEN_AI_REQUEST_MODEL] == attrs[A.GEN_AI_RESPONSE_MODEL] == MODEL
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop"]
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (26, 6)
    assert attrs[A.GEN_AI_REQUEST_STREAM] is False
    _same_attributes(recorded, served)


def test_streamed_chat_replays_the_same_lines(tape: Path) -> None:
    with fake_ollama() as api:
        with record(tape), agent_run("stream"):
            live = list(ollama.Client(host=api.url).chat(model=MODEL, messages=MESSAGES, stream=True))
        with _replayed(tape, "stream") as (again, session):
            replayed = list(ollama.Client(host=api.url).chat(model=MODEL, messages=MESSAGES, stream=True))
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert all(isinstance(part, ollama.ChatResponse) for part in replayed)
    assert replayed == live
    assert "".join(part.message.content or "" for part in replayed) == "You said: Weather in Paris?"
    assert replayed[-1].done and replayed[-1].eval_count == 6
    (recorded,) = _model_spans(tape)
    (served,) = _model_spans(again)
    attrs = recorded.attrs
    assert attrs[A.GEN_AI_REQUEST_STREAM] is True
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (26, 6)  # the last line's
    _same_attributes(recorded, served)
    result = orjson.loads(attrs[A.MODEL_RESULT])
    assert result["framing"] == "ndjson" and result["headers"]["content-type"] == "application/x-ndjson"
    assert len(result["events"]) == len(live) and all(e["text"].endswith("\n") for e in result["events"])


def test_a_request_without_a_stream_field_streams_as_ollama_does(tape: Path) -> None:
    """Ollama's default is to stream: a body that does not say ``"stream": false`` is a streamed step."""
    body = {"model": MODEL, "prompt": "Count to three"}

    def lines(url: str) -> list[str]:
        with httpx.Client() as client, client.stream("POST", f"{url}/api/generate", json=body) as response:
            return list(response.iter_lines())

    with fake_ollama() as api:
        with record(tape), agent_run("default-stream"):
            live = lines(api.url)
        with replay(tape) as session:
            replayed = lines(api.url)
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert replayed == live and len(live) == 6  # five words, then the closing line
    assert "".join(orjson.loads(line)["response"] for line in replayed) == "You said: Count to three"
    (span,) = _model_spans(tape)
    assert span.attrs["agent_replay.function"] == "ollama.generate"
    assert span.attrs[A.GEN_AI_REQUEST_STREAM] is True
    assert span.attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop"]


def test_generate_and_both_embedding_endpoints_replay_offline(tape: Path) -> None:
    def ask(client: ollama.Client) -> tuple[Any, Any, Any]:
        return (
            client.generate(model=MODEL, prompt="Say hi"),
            client.embed(model="embed-test", input=["alpha", "beta"]),
            client.embeddings(model="embed-test", prompt="gamma"),
        )

    with fake_ollama() as api:
        with record(tape), agent_run("more"):
            live = ask(ollama.Client(host=api.url))
        with _replayed(tape, "more") as (again, session):
            replayed = ask(ollama.Client(host=api.url))
        assert api.paths == ["/api/generate", "/api/embed", "/api/embeddings"]
    _sealed(session, 3)
    assert replayed == live
    assert isinstance(replayed[0], ollama.GenerateResponse) and replayed[0].response == "You said: Say hi"
    assert isinstance(replayed[1], ollama.EmbedResponse) and len(replayed[1].embeddings) == 2
    assert isinstance(replayed[2], ollama.EmbeddingsResponse) and len(replayed[2].embedding) == 4
    spans = _model_spans(tape)
    # `/api/embeddings` is Ollama's, not the OpenAI route whose path it also ends with
    assert [s.attrs["agent_replay.function"] for s in spans] == ["ollama.generate", "ollama.embed", "ollama.embeddings"]
    assert [s.name for s in spans] == [f"chat {MODEL}", "embeddings embed-test", "embeddings embed-test"]
    assert {s.attrs[A.GEN_AI_PROVIDER_NAME] for s in spans} == {"ollama"}
    assert spans[1].attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 4
    for recorded, served in zip(spans, _model_spans(again), strict=True):
        assert recorded.name == served.name
        assert served.attrs.get(A.GEN_AI_USAGE_INPUT_TOKENS) == recorded.attrs.get(A.GEN_AI_USAGE_INPUT_TOKENS)


def test_async_client_chat_and_stream_replay_offline(tape: Path) -> None:
    async def ask(api: FakeApi) -> tuple[str, str]:
        client = ollama.AsyncClient(host=api.url)
        whole = await client.chat(model=MODEL, messages=MESSAGES)
        parts = [
            part.message.content or "" async for part in await client.chat(model=MODEL, messages=MESSAGES, stream=True)
        ]
        return whole.message.content or "", "".join(parts)

    async def record_it(api: FakeApi) -> tuple[str, str]:
        with record(tape), agent_run("async"):
            return await ask(api)

    async def replay_it(api: FakeApi) -> tuple[tuple[str, str], ReplaySession]:
        with replay(tape) as session:
            return await ask(api), session

    with fake_ollama() as api:
        live = asyncio.run(record_it(api))
        replayed, session = asyncio.run(replay_it(api))
        assert len(api.requests) == 2
    _sealed(session, 2)
    assert replayed == live == ("You said: Weather in Paris?",) * 2
    assert [s.attrs[A.GEN_AI_REQUEST_STREAM] for s in _model_spans(tape)] == [False, True]
