"""The real ``anthropic`` SDK against a fake provider on 127.0.0.1: messages (tool use, streams)
recorded over HTTP and replayed offline; drift under the SDK's own retries is reported once, as drift."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anthropic
import orjson
import pytest
from anthropic.types import Message
from helpers.model_server import fake_provider
from helpers.rawtape import raw_spans

from otel_agent_replay import TapeDrift, agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import patched

API_KEY = "sk-ant-test-Secret0123456789abcdef"
MODEL = "claude-test"
TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "The weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def _client(url: str, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key=API_KEY, max_retries=max_retries)


def _ask(client: anthropic.Anthropic, text: str, **kw: Any) -> Message:
    return client.messages.create(
        model=MODEL, max_tokens=100, system="Be terse.", messages=[{"role": "user", "content": text}], **kw
    )


def test_messages_create_with_tool_use_replays_offline(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("claude"):
        live = _ask(_client(fp.url), "Weather in Paris?", tools=TOOLS)
    with replay(tape) as session:
        replayed = _ask(_client(fp.url), "Weather in Paris?", tools=TOOLS)
    assert len(fp.requests) == 1
    assert isinstance(replayed, Message) and replayed == live
    block = replayed.content[0]
    assert block.type == "tool_use" and block.name == "get_weather" and block.input == {"city": "Paris"}
    assert (session.stats.hits, session.stats.live_model_calls) == (1, 0)
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert span.name == "chat claude-test"
    assert span.attrs["agent_replay.function"] == "anthropic.messages"
    assert span.attrs[A.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert span.attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["tool_use"]
    assert (span.attrs[A.GEN_AI_USAGE_INPUT_TOKENS], span.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (11, 6)
    data = tape.read_bytes()
    assert API_KEY.encode() not in data and API_KEY[12:24].encode() not in data


def test_messages_stream_replays_the_same_text_and_events(tape: Path) -> None:
    def stream(url: str) -> tuple[list[str], Message]:
        with _client(url).messages.stream(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "Tell me a story"}]
        ) as s:
            texts = list(s.text_stream)
            final = s.get_final_message()
        return texts, final

    with fake_provider() as fp, record(tape), agent_run("stream"):
        live_texts, live_final = stream(fp.url)
    with replay(tape) as session:
        texts, final = stream(fp.url)
    assert len(fp.requests) == 1
    assert texts == live_texts == ["You ", "said: ", "Tell ", "me ", "a ", "story"]
    assert isinstance(final, Message) and final == live_final
    assert session.stats.hits == 1
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert span.attrs[A.GEN_AI_REQUEST_STREAM] is True
    assert span.attrs[A.GEN_AI_RESPONSE_ID] == "msg_fake2"
    assert span.attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["end_turn"]
    assert (span.attrs[A.GEN_AI_USAGE_INPUT_TOKENS], span.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (11, 6)
    events = orjson.loads(span.attrs[A.MODEL_RESULT])["events"]
    assert events[0]["text"].startswith("event: message_start\n")
    assert events[-1]["text"] == 'event: message_stop\ndata: {"type": "message_stop"}\n\n'


def test_drift_under_the_sdk_retries_is_reported_once_as_drift(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("drift"):
        _ask(_client(fp.url), "Weather in Paris?")
    # anthropic wraps what its transport raises in APIConnectionError and retries it (twice by default).
    with pytest.raises(TapeDrift) as info, replay(tape) as session:
        _ask(_client(fp.url, max_retries=2), "Weather in Rome?")
    assert "messages[0].content" in str(info.value)
    assert isinstance(info.value.__cause__, anthropic.APIConnectionError)
    assert session.stats.drifts == 1
    assert session.stats.steps == 1  # the retries did not become new steps (no miss, no storm)
    assert len(fp.requests) == 1
    assert not patched()


def test_drift_the_agent_swallows_still_fails_the_block(tape: Path) -> None:
    with fake_provider() as fp, record(tape), agent_run("drift"):
        _ask(_client(fp.url), "Weather in Paris?")
    # The agent shrugs off connection errors; the block still fails with the drift.
    with pytest.raises(TapeDrift), replay(tape), contextlib.suppress(anthropic.APIConnectionError):
        _ask(_client(fp.url, max_retries=1), "Weather in Rome?")
