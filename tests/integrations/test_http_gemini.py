"""The real ``google-genai`` SDK against a fake Gemini API on 127.0.0.1 (``tests/helpers/gemini_server.py``):
recorded over HTTP with no code change (the model is in the URL), then replayed strictly with the
server still up, and not one request reaches it. The API key, in a header or in the URL, never
reaches the tape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import orjson
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials
from helpers.fake_api import FakeApi
from helpers.gemini_server import fake_gemini
from helpers.rawtape import RawSpan, raw_spans

from otel_agent_replay import TapeDrift, agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.replayer import ReplaySession

API_KEY = "AIzaSyFAKE-Secret0123456789abcdefghij"
MODEL = "gemini-test"
RESPONSE_KEYS = (
    A.GEN_AI_PROVIDER_NAME,
    A.GEN_AI_REQUEST_MODEL,
    A.GEN_AI_RESPONSE_MODEL,
    A.GEN_AI_RESPONSE_ID,
    A.GEN_AI_RESPONSE_FINISH_REASONS,
    A.GEN_AI_USAGE_INPUT_TOKENS,
    A.GEN_AI_USAGE_OUTPUT_TOKENS,
    A.GEN_AI_REQUEST_STREAM,
)


def _client(api: FakeApi, **options: Any) -> genai.Client:
    """A client for the fake API. Keep it in a name while it is used: a collected ``genai.Client``
    closes its HTTP client (so ``_client(api).models.…`` fails in the SDK itself)."""
    return genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=api.url, **options))


def _model_spans(tape: Path) -> list[RawSpan]:
    return [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]


def _typed(value: Any) -> Any:
    """An SDK object without the live response's transport headers (date, server, content-length),
    which the tape leaves out by design (only an allow-list is kept)."""
    return value.model_dump(exclude={"sdk_http_response"})


@contextmanager
def _replayed(tape: Path, name: str) -> Iterator[tuple[Path, ReplaySession]]:
    """A strict replay of ``tape`` whose own spans are recorded on a second tape (no model routes there)."""
    again = tape.with_name("replayed.jsonl")
    with record(again, http_models=False), replay(tape) as session, agent_run(name):
        yield again, session


def _sealed(session: ReplaySession, hits: int) -> None:
    stats = session.stats
    assert (stats.hits, stats.misses, stats.live_model_calls, stats.passthrough_requests) == (hits, 0, 0, 0)


def test_generate_content_replays_strictly_with_the_server_up(tape: Path) -> None:
    with fake_gemini() as api:
        client = _client(api)
        with record(tape), agent_run("gemini"):
            live = client.models.generate_content(model=MODEL, contents="Weather in Paris?")
        assert api.paths == [f"/v1/models/{MODEL}:generateContent"]
        client = _client(api)
        with _replayed(tape, "gemini") as (again, session):
            replayed = client.models.generate_content(model=MODEL, contents="Weather in Paris?")
        assert len(api.requests) == 1  # the server was up; nothing reached it
    _sealed(session, 1)
    assert isinstance(replayed, types.GenerateContentResponse)
    assert replayed.text == live.text == "You said: Weather in Paris?"
    assert _typed(replayed) == _typed(live)
    (recorded,) = _model_spans(tape)
    (served,) = _model_spans(again)
    for span in (recorded, served):
        assert span.name == f"chat {MODEL}"
    attrs = recorded.attrs
    assert attrs["agent_replay.function"] == "gemini.generate_content"
    assert attrs[A.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    assert attrs[A.GEN_AI_REQUEST_MODEL] == MODEL
    assert attrs[A.GEN_AI_RESPONSE_MODEL] == f"{MODEL}-001"
    assert attrs[A.GEN_AI_RESPONSE_ID] == "gem-resp-1"
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["STOP"]
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (8, 5)
    assert attrs[A.GEN_AI_REQUEST_STREAM] is False
    assert {k: served.attrs.get(k) for k in RESPONSE_KEYS} == {k: attrs[k] for k in RESPONSE_KEYS}
    arguments = orjson.loads(attrs[A.MODEL_ARGUMENTS])
    assert arguments["model"] == MODEL and arguments["contents"][0]["parts"][0]["text"] == "Weather in Paris?"


def test_generate_content_stream_replays_the_same_chunks(tape: Path) -> None:
    with fake_gemini() as api:
        client = _client(api)
        with record(tape), agent_run("stream"):
            live = list(client.models.generate_content_stream(model=MODEL, contents="Say hi"))
        assert api.requests[0].query == "alt=sse"
        client = _client(api)
        with _replayed(tape, "stream") as (again, session):
            replayed = list(client.models.generate_content_stream(model=MODEL, contents="Say hi"))
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert all(isinstance(c, types.GenerateContentResponse) for c in replayed)
    assert [_typed(c) for c in replayed] == [_typed(c) for c in live]
    assert "".join(c.text or "" for c in replayed) == "You said: Say hi"
    (recorded,) = _model_spans(tape)
    (served,) = _model_spans(again)
    attrs = recorded.attrs
    assert recorded.name == served.name == f"chat {MODEL}"
    assert attrs["agent_replay.function"] == "gemini.stream_generate_content"
    assert attrs[A.GEN_AI_REQUEST_STREAM] is True  # the path says so; the body has no stream field
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (8, 5)  # the last event's
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["STOP"]
    assert {k: served.attrs.get(k) for k in RESPONSE_KEYS} == {k: attrs[k] for k in RESPONSE_KEYS}
    events = orjson.loads(attrs[A.MODEL_RESULT])["events"]
    assert len(events) == len(live) and all(e["text"].endswith("\r\n\r\n") for e in events)


def test_embed_content_replays_with_its_span_name(tape: Path) -> None:
    embedder = "text-embedding-test"
    with fake_gemini() as api:
        client = _client(api)
        with record(tape), agent_run("embed"):
            live = client.models.embed_content(model=embedder, contents=["alpha", "beta"])
        assert api.paths == [f"/v1/models/{embedder}:batchEmbedContents"]
        client = _client(api)
        with _replayed(tape, "embed") as (again, session):
            replayed = client.models.embed_content(model=embedder, contents=["alpha", "beta"])
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert isinstance(replayed, types.EmbedContentResponse)
    assert replayed.embeddings is not None and len(replayed.embeddings) == 2
    assert _typed(replayed) == _typed(live)
    for span in (*_model_spans(tape), *_model_spans(again)):
        assert span.name == f"embeddings {embedder}"
        assert span.attrs[A.GEN_AI_OPERATION_NAME] == "embeddings"
        assert span.attrs[A.GEN_AI_PROVIDER_NAME] == "gcp.gemini"


async def _ask_async(client: genai.Client) -> tuple[str, str]:
    whole = await client.aio.models.generate_content(model=MODEL, contents="Async hello")
    parts = [
        chunk.text or ""
        async for chunk in await client.aio.models.generate_content_stream(model=MODEL, contents="Async stream")
    ]
    return whole.text or "", "".join(parts)


def test_async_client_over_httpx_replays_strictly_with_the_server_up(tape: Path) -> None:
    """``client.aio`` sends through httpx2 when given an httpx2 client (google-genai picks aiohttp when
    it is installed and the options name no httpx client)."""

    def client(api: FakeApi) -> genai.Client:
        return _client(api, httpx_async_client=httpx2.AsyncClient(base_url=api.url))

    async def record_it(api: FakeApi) -> tuple[str, str]:
        made = client(api)
        with record(tape), agent_run("async"):
            return await _ask_async(made)

    async def replay_it(api: FakeApi) -> tuple[tuple[str, str], ReplaySession]:
        made = client(api)
        with replay(tape) as session:
            return await _ask_async(made), session

    with fake_gemini() as api:
        live = asyncio.run(record_it(api))
        assert len(api.requests) == 2
        replayed, session = asyncio.run(replay_it(api))
        assert len(api.requests) == 2
    _sealed(session, 2)
    assert replayed == live == ("You said: Async hello", "You said: Async stream")
    spans = _model_spans(tape)
    assert [s.attrs["agent_replay.function"] for s in spans] == [
        "gemini.generate_content",
        "gemini.stream_generate_content",
    ]
    assert all(s.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 5 for s in spans)


def test_the_api_key_in_a_header_or_in_the_url_never_reaches_the_tape(tape: Path) -> None:
    """google-genai sends ``x-goog-api-key``; the REST examples put ``?key=`` in the URL. Neither is an
    argument of the model step (its arguments are the body and the model), so a replay with another key
    is still a hit."""
    body = {"contents": [{"role": "user", "parts": [{"text": "Key in the URL"}]}]}
    url = "{}/v1beta/models/" + MODEL + ":generateContent?key={}"
    with fake_gemini() as api:
        client = _client(api)
        with record(tape), agent_run("keys"):
            client.models.generate_content(model=MODEL, contents="Key in a header")
            live = httpx.post(url.format(api.url, API_KEY), json=body)
        assert [seen.headers.get("x-goog-api-key") for seen in api.requests] == [API_KEY, None]
        assert api.requests[1].query == f"key={API_KEY}"  # both did carry the key to the server
        with replay(tape) as session, agent_run("keys"):
            client.models.generate_content(model=MODEL, contents="Key in a header")
            replayed = httpx.post(url.format(api.url, "AIzaSyAnotherKeyAltogether000000000000"), json=body)
        assert len(api.requests) == 2
    _sealed(session, 2)
    assert replayed.json() == live.json()
    data = tape.read_bytes()
    assert API_KEY.encode() not in data and API_KEY[6:24].encode() not in data
    assert b"x-goog-api-key" not in data and b"key=" not in data
    spans = _model_spans(tape)
    assert [s.attrs["agent_replay.function"] for s in spans] == ["gemini.generate_content"] * 2
    assert set(orjson.loads(spans[1].attrs[A.MODEL_ARGUMENTS])) == {"contents", "model"}


def test_a_key_in_the_query_of_any_other_request_is_not_recorded(tape: Path) -> None:
    """A request no model route matches (listing the models) is an HTTP step whose arguments are its
    query: ``key`` (and the signature parameters of presigned URLs) keep their name, never their
    value, so a replay with another key is still served."""
    url = "{}/v1beta/models?key={}&pageSize=5"
    with fake_gemini() as api:
        with record(tape), agent_run("list"):
            live = httpx.get(url.format(api.url, API_KEY))
        assert api.requests[0].query == f"key={API_KEY}&pageSize=5"
        with replay(tape) as session, agent_run("list"):
            replayed = httpx.get(url.format(api.url, "AIzaSyAnotherKeyAltogether000000000000"))
        assert len(api.requests) == 1
    assert replayed.json() == live.json() and session.stats.hits == 1
    data = tape.read_bytes()
    assert API_KEY.encode() not in data and API_KEY[6:24].encode() not in data
    (step,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "http"]
    assert step.attrs[A.GEN_AI_TOOL_NAME] == "GET " + api.url.removeprefix("http://") + "/v1beta/models"
    query = orjson.loads(step.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS])["query"]
    assert query == {"key": "[REDACTED]", "pageSize": "5"}


def test_a_changed_prompt_is_drift_naming_the_field(tape: Path) -> None:
    with fake_gemini() as api:
        client = _client(api)
        with record(tape), agent_run("drift"):
            client.models.generate_content(model=MODEL, contents="Weather in Paris?")
        with pytest.raises(TapeDrift) as info, replay(tape) as session, agent_run("drift"):
            client.models.generate_content(model=MODEL, contents="Weather in Rome?")
        assert len(api.requests) == 1
    assert "contents[0].parts[0].text" in str(info.value)
    assert "Weather in Paris?" in str(info.value) and "Weather in Rome?" in str(info.value)
    assert session.stats.drifts == 1


def test_a_recorded_429_replays_as_the_sdk_error(tape: Path) -> None:
    with fake_gemini() as api:
        client = _client(api)
        with record(tape), agent_run("limited"), pytest.raises(errors.ClientError):
            client.models.generate_content(model="rate-limited", contents="Hi")
        with replay(tape) as session, agent_run("limited"), pytest.raises(errors.ClientError) as info:
            client.models.generate_content(model="rate-limited", contents="Hi")
        assert len(api.requests) == 1
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
    _sealed(session, 1)
    (span,) = _model_spans(tape)
    assert orjson.loads(span.attrs[A.MODEL_RESULT])["status"] == 429
    assert span.name == "chat rate-limited"


def test_vertex_ai_is_recorded_under_its_own_provider_name(tape: Path) -> None:
    """google-genai on Vertex AI (``vertexai=True``) speaks the same paths on a regional
    ``…-aiplatform.googleapis.com`` host: the route is Gemini's, the provider ``gcp.vertex_ai``. The
    client goes through a forward proxy on 127.0.0.1 (the fake answers the proxied request), so the
    host is the real one; the bearer token never reaches the tape."""
    token = "ya29.fake-Secret-token-0123456789"

    def client(api: FakeApi) -> genai.Client:
        options = types.HttpOptions(
            base_url="http://us-central1-aiplatform.googleapis.com/", client_args={"proxy": api.url}
        )
        credentials = Credentials(token=token)
        return genai.Client(
            vertexai=True, project="proj", location="us-central1", credentials=credentials, http_options=options
        )

    with fake_gemini() as api:
        made = client(api)
        with record(tape), agent_run("vertex"):
            live = made.models.generate_content(model=MODEL, contents="Hello Vertex")
        assert api.paths[0].startswith("http://us-central1-aiplatform.googleapis.com/")  # proxied
        assert api.paths[0].endswith(f"/publishers/google/models/{MODEL}:generateContent")
        made = client(api)
        with replay(tape) as session, agent_run("vertex"):
            replayed = made.models.generate_content(model=MODEL, contents="Hello Vertex")
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert replayed.text == live.text == "You said: Hello Vertex"
    (span,) = _model_spans(tape)
    assert span.name == f"chat {MODEL}"
    assert span.attrs["agent_replay.function"] == "gemini.generate_content"
    assert span.attrs[A.GEN_AI_PROVIDER_NAME] == "gcp.vertex_ai"
    assert (span.attrs[A.GEN_AI_USAGE_INPUT_TOKENS], span.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (8, 5)
    assert token.encode() not in tape.read_bytes()


def test_async_client_over_aiohttp_replays_strictly_with_the_server_up(tape: Path) -> None:
    """``client.aio`` as a user gets it: with aiohttp installed (the dev extra has it) google-genai sends
    through an ``aiohttp.ClientSession`` of its own, which needs the aiohttp capture point."""

    async def record_it(api: FakeApi) -> tuple[str, str]:
        made = _client(api)
        assert made._api_client._use_aiohttp()  # the path under test, not httpx's
        with record(tape), agent_run("aiohttp"):
            return await _ask_async(made)

    async def replay_it(api: FakeApi) -> tuple[tuple[str, str], ReplaySession]:
        made = _client(api)
        with replay(tape) as session:
            return await _ask_async(made), session

    with fake_gemini() as api:
        live = asyncio.run(record_it(api))
        assert len(api.requests) == 2
        replayed, session = asyncio.run(replay_it(api))
        assert len(api.requests) == 2
    _sealed(session, 2)
    assert replayed == live == ("You said: Async hello", "You said: Async stream")
    spans = _model_spans(tape)
    assert [s.attrs["agent_replay.function"] for s in spans] == [
        "gemini.generate_content",
        "gemini.stream_generate_content",
    ]
