"""The real ``openai`` SDK against a fake provider on 127.0.0.1: recorded over HTTP with no code change,
replayed with the provider stopped (no request reaches it), typed SDK objects and errors back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from helpers.model_server import FakeProvider, fake_provider
from helpers.rawtape import RawSpan, raw_spans
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response

from otel_agent_replay import TapeDrift, agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import patched

API_KEY = "sk-test-Secret0123456789abcdef"
SYSTEM = "You are terse."
MESSAGES: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Weather in Paris?"}]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def _client(url: str, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=API_KEY, max_retries=kw.pop("max_retries", 0), **kw)


def _stopped_url(provider: FakeProvider) -> str:
    """The provider's URL once it has stopped: a live call there would fail to connect."""
    return provider.openai_url


def _model_spans(tape: Path) -> list[RawSpan]:
    return [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]


def test_chat_completion_with_tool_calls_records_and_replays_offline(tape: Path) -> None:
    with fake_provider() as fp:
        client = _client(fp.openai_url)
        with record(tape), agent_run("weather"):
            live = client.chat.completions.create(model="gpt-test", messages=MESSAGES, tools=TOOLS)
        assert len(fp.requests) == 1
    assert live.choices[0].message.tool_calls
    with replay(tape) as session:
        replayed = _client(_stopped_url(fp)).chat.completions.create(model="gpt-test", messages=MESSAGES, tools=TOOLS)
    assert len(fp.requests) == 1  # the replay sent nothing
    assert isinstance(replayed, ChatCompletion)
    assert replayed == live
    call = replayed.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    stats = session.stats
    assert (stats.hits, stats.live_model_calls, stats.misses) == (1, 0, 0)
    (span,) = _model_spans(tape)
    attrs = span.attrs
    assert span.name == "chat gpt-test"
    assert attrs[A.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs["agent_replay.function"] == "openai.chat.completions"
    assert attrs[A.GEN_AI_REQUEST_MODEL] == attrs[A.GEN_AI_RESPONSE_MODEL] == "gpt-test"
    assert attrs[A.GEN_AI_RESPONSE_ID] == "chatcmpl-fake1"
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["tool_calls"]
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (12, 7)
    assert attrs[A.GEN_AI_REQUEST_STREAM] is False
    assert orjson.loads(attrs[A.MODEL_ARGUMENTS])["messages"][0]["content"] == SYSTEM


def test_the_replay_span_of_a_model_call_carries_the_response_attributes_as_recorded(tape: Path) -> None:
    with fake_provider() as fp:
        with record(tape), agent_run("weather"):
            _client(fp.openai_url).chat.completions.create(model="gpt-test", messages=MESSAGES, tools=TOOLS)
        replayed_tape = tape.with_name("replayed.jsonl")
        with record(replayed_tape, http_models=False), replay(tape), agent_run("weather"):
            _client(_stopped_url(fp)).chat.completions.create(model="gpt-test", messages=MESSAGES, tools=TOOLS)
        assert len(fp.requests) == 1
    (recorded,) = _model_spans(tape)
    (replayed,) = _model_spans(replayed_tape)
    response_keys = [
        A.GEN_AI_RESPONSE_MODEL,
        A.GEN_AI_RESPONSE_ID,
        A.GEN_AI_RESPONSE_FINISH_REASONS,
        A.GEN_AI_USAGE_INPUT_TOKENS,
        A.GEN_AI_USAGE_OUTPUT_TOKENS,
    ]
    assert all(key in recorded.attrs for key in response_keys)
    assert {k: replayed.attrs.get(k) for k in response_keys} == {k: recorded.attrs[k] for k in response_keys}


def test_the_replay_span_of_a_streamed_call_carries_the_recorded_answer(tape: Path) -> None:
    """The answer's facts and messages on a replayed stream's span are the recorded step's."""

    def ask(url: str) -> str:
        stream = _client(url).chat.completions.create(model="gpt-test", messages=MESSAGES, stream=True)
        return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    with fake_provider() as fp:
        with record(tape), agent_run("weather"):
            live = ask(fp.openai_url)
        replayed_tape = tape.with_name("replayed.jsonl")
        with record(replayed_tape, http_models=False), replay(tape), agent_run("weather"):
            again = ask(_stopped_url(fp))
        assert len(fp.requests) == 1
    assert again == live and live
    (recorded,) = _model_spans(tape)
    (replayed,) = _model_spans(replayed_tape)
    keys = [A.GEN_AI_OUTPUT_MESSAGES, A.GEN_AI_RESPONSE_MODEL, A.GEN_AI_RESPONSE_ID, A.GEN_AI_RESPONSE_FINISH_REASONS]
    assert all(key in recorded.attrs for key in keys), sorted(recorded.attrs)
    assert {k: replayed.attrs.get(k) for k in keys} == {k: recorded.attrs[k] for k in keys}
    assert live in recorded.attrs[A.GEN_AI_OUTPUT_MESSAGES]


def test_async_chat_completion_replays_offline(tape: Path) -> None:
    async def ask(url: str) -> ChatCompletion:
        async with openai.AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0) as client:
            return await client.chat.completions.create(model="gpt-test", messages=MESSAGES)

    async def record_it(url: str) -> ChatCompletion:
        with record(tape), agent_run("async"):
            return await ask(url)

    async def replay_it(url: str) -> tuple[ChatCompletion, Any]:
        with replay(tape) as session:
            return await ask(url), session.stats

    with fake_provider() as fp:
        live = asyncio.run(record_it(fp.openai_url))
    replayed, stats = asyncio.run(replay_it(fp.openai_url))
    assert len(fp.requests) == 1
    assert isinstance(replayed, ChatCompletion) and replayed == live
    assert replayed.choices[0].message.content == "You said: Weather in Paris?"
    assert (stats.hits, stats.live_model_calls) == (1, 0)


def test_streamed_chat_completion_replays_the_same_chunks_and_records_streamed_usage(tape: Path) -> None:
    kwargs: dict[str, Any] = {
        "model": "gpt-test",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with fake_provider() as fp, record(tape), agent_run("stream"):
        live = list(_client(fp.openai_url).chat.completions.create(**kwargs))
    with replay(tape) as session:
        replayed = list(_client(fp.openai_url).chat.completions.create(**kwargs))
    assert len(fp.requests) == 1
    assert all(isinstance(c, ChatCompletionChunk) for c in replayed)
    assert replayed == live
    assert "".join(c.choices[0].delta.content or "" for c in replayed if c.choices) == "You said: Weather in Paris?"
    assert replayed[-1].usage is not None and replayed[-1].usage.completion_tokens == 7
    assert session.stats.hits == 1
    (span,) = _model_spans(tape)
    attrs = span.attrs
    assert attrs[A.GEN_AI_REQUEST_STREAM] is True
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (12, 7)
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop"]
    result = orjson.loads(attrs[A.MODEL_RESULT])
    events = result["events"]
    assert len(events) == len(live) + 1  # the chunks, then [DONE]
    assert events[-1]["text"] == "data: [DONE]\n\n"
    offsets = [e["offset"] for e in events]
    assert offsets == sorted(offsets) and offsets[-1] > 0


def test_responses_create_and_its_stream_replay_offline(tape: Path) -> None:
    with fake_provider() as fp:
        client = _client(fp.openai_url)
        with record(tape), agent_run("responses"):
            live = client.responses.create(model="gpt-test", input="Say hi")
            live_events = list(client.responses.create(model="gpt-test", input="Say hi twice", stream=True))
    with replay(tape) as session:
        client = _client(fp.openai_url)
        replayed = client.responses.create(model="gpt-test", input="Say hi")
        replayed_events = list(client.responses.create(model="gpt-test", input="Say hi twice", stream=True))
    assert len(fp.requests) == 2
    assert isinstance(replayed, Response) and replayed == live
    assert replayed.output_text == "You said: Say hi"
    assert replayed_events == live_events
    assert [e.type for e in replayed_events][-1] == "response.completed"
    assert session.stats.hits == 2
    spans = _model_spans(tape)
    assert [s.attrs["agent_replay.function"] for s in spans] == ["openai.responses"] * 2
    assert spans[1].attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 4  # from response.completed


def test_embeddings_replay_offline_with_their_span_name(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("embed"):
        live = _client(fp.openai_url).embeddings.create(model="embed-test", input=["alpha", "beta"])
    with replay(tape):
        replayed = _client(fp.openai_url).embeddings.create(model="embed-test", input=["alpha", "beta"])
    assert len(fp.requests) == 1
    assert isinstance(replayed, CreateEmbeddingResponse) and replayed == live
    assert len(replayed.data) == 2 and len(replayed.data[0].embedding) == 4
    (span,) = _model_spans(tape)
    assert span.name == "embeddings embed-test"
    assert span.attrs[A.GEN_AI_OPERATION_NAME] == "embeddings"
    assert span.attrs["agent_replay.function"] == "openai.embeddings"


def test_changed_system_prompt_is_drift_naming_the_field(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("drift"):
        _client(fp.openai_url).chat.completions.create(model="gpt-test", messages=MESSAGES)
    changed = [{"role": "system", "content": "You are verbose."}, MESSAGES[1]]
    with pytest.raises(TapeDrift) as info, replay(tape) as session:
        # openai retries transport errors only (httpx2.RequestError and kin): the drift comes through as itself.
        _client(fp.openai_url, max_retries=2).chat.completions.create(model="gpt-test", messages=changed)
    assert "messages[0].content" in str(info.value)
    assert "You are terse." in str(info.value) and "You are verbose." in str(info.value)
    assert session.stats.drifts == 1
    assert len(fp.requests) == 1


def test_recorded_429_replays_as_the_sdk_rate_limit_error(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("limited"), pytest.raises(openai.RateLimitError):
        _client(fp.openai_url).chat.completions.create(model="rate-limited", messages=MESSAGES)
    with replay(tape) as session, pytest.raises(openai.RateLimitError) as info:
        _client(fp.openai_url).chat.completions.create(model="rate-limited", messages=MESSAGES)
    assert info.value.status_code == 429
    assert info.value.code == "rate_limit_exceeded"
    assert len(fp.requests) == 1
    assert session.stats.hits == 1
    (span,) = _model_spans(tape)
    assert orjson.loads(span.attrs[A.MODEL_RESULT])["status"] == 429


def test_an_sdk_retry_after_a_500_replays_as_recorded(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("flaky"):
        live = _client(fp.openai_url, max_retries=2).chat.completions.create(model="flaky-once", messages=MESSAGES)
    assert len(fp.requests) == 2  # the 500, then the retry
    with replay(tape) as session:
        replayed = _client(fp.openai_url, max_retries=2).chat.completions.create(model="flaky-once", messages=MESSAGES)
    assert replayed == live
    assert (session.stats.hits, session.stats.misses, session.stats.live_model_calls) == (2, 0, 0)
    statuses = [orjson.loads(s.attrs[A.MODEL_RESULT])["status"] for s in _model_spans(tape)]
    assert statuses == [500, 200]


def test_api_key_never_reaches_the_tape_and_nothing_stays_patched(tape: Path) -> None:
    import httpx2

    original = httpx2.HTTPTransport.__dict__["handle_request"]
    with fake_provider() as fp:
        client = _client(fp.openai_url, organization="org-fake", default_headers={"x-api-key": API_KEY})
        with record(tape), agent_run("secret"):
            assert patched()
            assert httpx2.HTTPTransport.__dict__["handle_request"] is not original
            client.chat.completions.create(model="gpt-test", messages=MESSAGES)
        assert fp.requests[0][1]["authorization"] == f"Bearer {API_KEY}"  # it did go to the provider
    assert not patched()
    assert httpx2.HTTPTransport.__dict__["handle_request"] is original
    data = tape.read_bytes()
    assert API_KEY.encode() not in data and b"Bearer" not in data
    assert API_KEY[8:20].encode() not in data


def test_models_live_runs_the_model_while_the_tape_exists(tape: Path) -> None:
    with fake_provider() as fp:
        with record(tape), agent_run("live"):
            _client(fp.openai_url).chat.completions.create(model="gpt-test", messages=MESSAGES)
        with replay(tape, models="live") as session:
            again = _client(fp.openai_url).chat.completions.create(model="gpt-test", messages=MESSAGES)
        assert len(fp.requests) == 2
    assert isinstance(again, ChatCompletion) and again.choices[0].message.content == "You said: Weather in Paris?"
    assert session.stats.live_model_calls == 1


def test_the_volatile_request_fields_are_left_out_of_the_key(tape: Path) -> None:
    """The model routes carry the @model_volatile preset: a new end-user id or tool-call id is not drift."""
    turn = [*MESSAGES, {"role": "tool", "tool_call_id": "call_recorded", "content": "42"}]
    with fake_provider() as fp, record(tape), agent_run("volatile"):
        _client(fp.openai_url).chat.completions.create(model="gpt-test", messages=turn, user="u-1")
    minted = [*MESSAGES, {"role": "tool", "tool_call_id": "call_minted_now", "content": "42"}]
    with replay(tape) as session:
        _client(fp.openai_url).chat.completions.create(model="gpt-test", messages=minted, user="u-2")
    assert session.stats.hits == 1 and session.stats.drifts == 0
    assert len(fp.requests) == 1
    (span,) = _model_spans(tape)
    assert "call_recorded" in span.attrs[A.MODEL_ARGUMENTS]  # the tape keeps the fields; only the key leaves them out
