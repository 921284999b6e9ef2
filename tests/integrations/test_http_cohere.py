"""The real ``cohere`` SDK (``ClientV2``) against a fake Cohere v2 API on 127.0.0.1
(``tests/helpers/cohere_server.py``): chat, streamed chat (server-sent events) and embed recorded over
HTTP with no code change, then replayed strictly with the server still up, and not one request
reaches it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cohere
import orjson
import pytest
from cohere.v2.types import V2ChatResponse
from helpers.cohere_server import CHAT_ID, fake_cohere
from helpers.fake_api import FakeApi
from helpers.rawtape import RawSpan, raw_spans

from otel_agent_replay import TapeDrift, agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.replayer import ReplaySession

API_KEY = "co-test-Secret0123456789abcdefghij"
MODEL = "command-test"
MESSAGES: list[Any] = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Weather in Paris?"}]
RESPONSE_KEYS = (
    A.GEN_AI_PROVIDER_NAME,
    A.GEN_AI_REQUEST_MODEL,
    A.GEN_AI_RESPONSE_ID,
    A.GEN_AI_RESPONSE_FINISH_REASONS,
    A.GEN_AI_USAGE_INPUT_TOKENS,
    A.GEN_AI_USAGE_OUTPUT_TOKENS,
    A.GEN_AI_REQUEST_STREAM,
)


def _client(api: FakeApi) -> cohere.ClientV2:
    return cohere.ClientV2(api_key=API_KEY, base_url=api.url)


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
    assert recorded.name == served.name == f"chat {MODEL}"
    assert {k: served.attrs.get(k) for k in RESPONSE_KEYS} == {k: recorded.attrs[k] for k in RESPONSE_KEYS}


def test_chat_replays_strictly_with_the_server_up(tape: Path) -> None:
    with fake_cohere() as api:
        with record(tape), agent_run("cohere"):
            live = _client(api).chat(model=MODEL, messages=MESSAGES)
        with _replayed(tape, "cohere") as (again, session):
            replayed = _client(api).chat(model=MODEL, messages=MESSAGES)
        assert api.paths == ["/v2/chat"]  # the server was up; the replay sent nothing
        assert api.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    _sealed(session, 1)
    assert isinstance(replayed, V2ChatResponse) and replayed == live
    assert replayed.message.content is not None
    assert replayed.message.content[0].text == "You said: Weather in Paris?"
    (recorded,) = _model_spans(tape)
    (served,) = _model_spans(again)
    attrs = recorded.attrs
    assert attrs["agent_replay.function"] == "cohere.chat"
    assert attrs[A.GEN_AI_PROVIDER_NAME] == "cohere"
    assert attrs[A.GEN_AI_REQUEST_MODEL] == MODEL
    assert attrs[A.GEN_AI_RESPONSE_ID] == CHAT_ID
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["COMPLETE"]
    # usage.tokens (what the model read and wrote) is preferred over usage.billed_units
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (71, 4)
    assert attrs[A.GEN_AI_REQUEST_STREAM] is False
    _same_attributes(recorded, served)
    data = tape.read_bytes() + again.read_bytes()
    assert API_KEY.encode() not in data and b"Bearer" not in data


def test_chat_stream_replays_the_same_events(tape: Path) -> None:
    with fake_cohere() as api:
        with record(tape), agent_run("stream"):
            live = list(_client(api).chat_stream(model=MODEL, messages=MESSAGES))
        with _replayed(tape, "stream") as (again, session):
            replayed = list(_client(api).chat_stream(model=MODEL, messages=MESSAGES))
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert replayed == live
    assert replayed[0].type == "message-start" and replayed[-1].type == "message-end"
    text = "".join(e.delta.message.content.text or "" for e in replayed if e.type == "content-delta")
    assert text == "You said: Weather in Paris?"
    (recorded,) = _model_spans(tape)
    (served,) = _model_spans(again)
    attrs = recorded.attrs
    assert attrs[A.GEN_AI_REQUEST_STREAM] is True
    assert attrs[A.GEN_AI_RESPONSE_ID] == CHAT_ID  # from message-start
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["COMPLETE"]  # from message-end
    assert (attrs[A.GEN_AI_USAGE_INPUT_TOKENS], attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (71, 4)
    _same_attributes(recorded, served)
    events = orjson.loads(attrs[A.MODEL_RESULT])["events"]
    assert events[0]["text"].startswith("event: message-start\n") and events[-1]["text"] == "data: [DONE]\n\n"


def test_embed_replays_with_its_span_name_and_billed_tokens(tape: Path) -> None:
    def ask(api: FakeApi) -> Any:
        return _client(api).embed(
            model="embed-test", texts=["alpha", "beta"], input_type="search_document", embedding_types=["float"]
        )

    with fake_cohere() as api:
        with record(tape), agent_run("embed"):
            live = ask(api)
        with _replayed(tape, "embed") as (again, session):
            replayed = ask(api)
        assert api.paths == ["/v2/embed"]
    _sealed(session, 1)
    assert replayed == live and replayed.embeddings.float_ is not None and len(replayed.embeddings.float_) == 2
    for span in (*_model_spans(tape), *_model_spans(again)):
        assert span.name == "embeddings embed-test"
        assert span.attrs["agent_replay.function"] == "cohere.embed"
        assert span.attrs[A.GEN_AI_OPERATION_NAME] == "embeddings"
        assert span.attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 2  # meta.billed_units


def test_async_chat_replays_offline(tape: Path) -> None:
    async def ask(api: FakeApi) -> V2ChatResponse:
        return await cohere.AsyncClientV2(api_key=API_KEY, base_url=api.url).chat(model=MODEL, messages=MESSAGES)

    async def record_it(api: FakeApi) -> V2ChatResponse:
        with record(tape), agent_run("async"):
            return await ask(api)

    async def replay_it(api: FakeApi) -> tuple[V2ChatResponse, ReplaySession]:
        with replay(tape) as session:
            return await ask(api), session

    with fake_cohere() as api:
        live = asyncio.run(record_it(api))
        replayed, session = asyncio.run(replay_it(api))
        assert len(api.requests) == 1
    _sealed(session, 1)
    assert replayed == live


def test_a_changed_message_is_drift_naming_the_field_not_a_retry(tape: Path) -> None:
    changed = [MESSAGES[0], {"role": "user", "content": "Weather in Rome?"}]
    with fake_cohere() as api:
        with record(tape), agent_run("drift"):
            _client(api).chat(model=MODEL, messages=MESSAGES)
        with pytest.raises(TapeDrift) as info, replay(tape) as session, agent_run("drift"):
            _client(api).chat(model=MODEL, messages=changed)
        assert len(api.requests) == 1
    assert "messages[1].content" in str(info.value)
    assert session.stats.drifts == 1 and session.stats.misses == 0
