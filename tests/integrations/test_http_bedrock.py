"""boto3 ``bedrock-runtime`` against a fake Bedrock on 127.0.0.1 (the real wire formats: JSON and the
binary AWS event stream): recorded with no code change, replayed strictly with the server still up
and receiving nothing, the same typed dicts back; the event stream kept as readable JSON and given
back byte for byte; the AWS signature never on the tape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import pytest
import urllib3
from helpers.bedrock_server import USAGE, bedrock_server, event_message, stream_events
from helpers.rawtape import raw_spans

from otel_agent_replay import agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations._eventstream import AWS_EVENT_STREAM, decode, encode

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
ACCESS_KEY = "AKIAZ7QW3ERTY5UIOP2L"
SECRET_KEY = "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"
SESSION_TOKEN = "FwoGZXIvYXdzEBQaDHx7Sess10nT0ken9z8y7x6w5v4u3t2s1r0q"
MESSAGES: list[Any] = [{"role": "user", "content": [{"text": "What is the capital of France?"}]}]


def _client(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=SESSION_TOKEN,
        config=botocore.config.Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def _without_metadata(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def _converse(url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    client = _client(url)
    whole = client.converse(modelId=MODEL, messages=MESSAGES, inferenceConfig={"maxTokens": 64})
    streamed = client.converse_stream(modelId=MODEL, messages=MESSAGES, inferenceConfig={"maxTokens": 64})
    return _without_metadata(whole), list(streamed["stream"])


def test_converse_and_converse_stream_replay_with_the_server_up_and_untouched(tape: Path) -> None:
    with bedrock_server() as server:
        with record(tape), agent_run("bedrock"):
            live_whole, live_events = _converse(server.url)
        assert len(server.requests) == 2
        before = (len(server.requests), server.received)
        with replay(tape) as session:
            whole, events = _converse(server.url)
        assert (len(server.requests), server.received) == before  # the server is up and got nothing
    assert whole == live_whole
    assert whole["output"]["message"]["content"] == [{"text": "You said: What is the capital of France?"}]
    assert whole["usage"] == USAGE and whole["stopReason"] == "end_turn"
    assert events == live_events
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == "You said: What is the capital of France?"
    assert events[-1]["metadata"]["usage"] == USAGE
    assert session.stats.hits == 2 and session.stats.live_model_calls == 0


def test_the_model_steps_carry_the_route_the_model_from_the_url_and_bedrocks_usage(tape: Path) -> None:
    with bedrock_server() as server, record(tape), agent_run("bedrock"):
        _converse(server.url)
    steps = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert [s.name for s in steps] == [f"chat {MODEL}"] * 2
    for step, streams in zip(steps, (False, True), strict=True):
        assert step.attrs[A.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
        assert step.attrs[A.GEN_AI_REQUEST_MODEL] == MODEL
        assert step.attrs[A.GEN_AI_REQUEST_STREAM] is streams
        assert (step.attrs[A.GEN_AI_USAGE_INPUT_TOKENS], step.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (21, 9)
        assert step.attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["end_turn"]
    assert [s.attrs["agent_replay.function"] for s in steps] == ["bedrock.converse", "bedrock.converse_stream"]


def test_the_aws_signature_never_reaches_the_tape(tape: Path) -> None:
    with bedrock_server() as server:
        with record(tape), agent_run("bedrock"):
            _converse(server.url)
        sent = server.requests[0][2]
    signed = [sent["authorization"], sent["x-amz-date"], sent["x-amz-security-token"]]
    assert ACCESS_KEY in signed[0] and signed[2] == SESSION_TOKEN  # the request was signed live
    data = tape.read_bytes()
    for secret in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, *signed, "AWS4-HMAC-SHA256"):
        assert secret.encode() not in data, secret
    assert b"x-amz-" not in data.lower()


def test_a_bedrock_error_status_raises_botocores_own_client_error_on_replay(tape: Path) -> None:
    def ask(url: str) -> botocore.exceptions.ClientError:
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            _client(url).converse(modelId="validation-error", messages=MESSAGES)
        return caught.value

    with bedrock_server() as server:
        with record(tape), agent_run("bedrock"):
            live = ask(server.url)
        before = server.received
        with replay(tape):
            again = ask(server.url)
        assert server.received == before
    assert again.response["Error"] == live.response["Error"]
    assert again.response["Error"]["Code"] == "ValidationException"


def test_the_event_stream_is_kept_as_readable_json_and_comes_back_byte_for_byte(tape: Path) -> None:
    def raw_chunks(url: str) -> list[bytes]:
        body = json.dumps({"messages": MESSAGES}).encode()
        response = urllib3.PoolManager().request(
            "POST", f"{url}/model/{MODEL}/converse-stream", body=body, preload_content=False
        )
        assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
        return list(response.stream(None))

    with bedrock_server() as server:
        with record(tape), agent_run("bytes"):
            live = raw_chunks(server.url)
        before = server.received
        with replay(tape):
            replayed = raw_chunks(server.url)
        assert server.received == before
    assert b"".join(replayed) == b"".join(live) == b"".join(stream_events({"messages": MESSAGES}))
    assert replayed == stream_events({"messages": MESSAGES})  # one chunk per message
    [step] = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    result = json.loads(step.attrs[A.MODEL_RESULT])
    assert result["framing"] == "aws-eventstream"
    assert result["events"][1]["headers"][":event-type"] == "contentBlockDelta"
    assert result["events"][1]["payload"] == {"contentBlockIndex": 0, "delta": {"text": "You"}, "p": "abcd"}
    assert all("raw" not in event for event in result["events"])


def test_event_stream_messages_split_across_any_chunks_encode_back_to_the_same_bytes() -> None:
    messages = stream_events({"messages": MESSAGES})
    stream = b"".join(messages)
    for size in (1, 7, 64, len(stream)):
        splitter = AWS_EVENT_STREAM.splitter()
        events = [e for at in range(0, len(stream), size) for e in splitter.feed(stream[at : at + size])]
        assert splitter.rest() == []
        assert [encode(e) for e in events] == messages
    typed = event_message("chunk", {"bytes": "eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0="})
    assert AWS_EVENT_STREAM.payload(decode(typed)) == {"bytes": "eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0="}
    corrupt = typed[:-1] + bytes([typed[-1] ^ 1])  # a bad message CRC: kept as it arrived
    assert decode(corrupt).keys() == {"raw"} and encode(decode(corrupt)) == corrupt
    cut = AWS_EVENT_STREAM.splitter()
    assert cut.feed(typed[:20]) == [] and encode(cut.rest()[0]) == typed[:20]


def test_invoke_model_and_its_response_stream_replay_and_read_the_models_own_usage(tape: Path) -> None:
    body = json.dumps(
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
    )

    def invoke(url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        client = _client(url)
        whole = json.loads(client.invoke_model(modelId=MODEL, body=body)["body"].read())
        stream = client.invoke_model_with_response_stream(modelId=MODEL, body=body)["body"]
        return whole, [json.loads(event["chunk"]["bytes"]) for event in stream]

    with bedrock_server() as server:
        with record(tape), agent_run("invoke"):
            live = invoke(server.url)
        before = server.received
        with replay(tape) as session:
            again = invoke(server.url)
        assert server.received == before
    assert again == live
    assert live[0]["content"] == [{"type": "text", "text": "You said: Hi"}]
    assert "".join(c["delta"]["text"] for c in live[1] if c["type"] == "content_block_delta") == "You said: Hi"
    assert session.stats.hits == 2
    steps = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert [s.attrs["agent_replay.function"] for s in steps] == ["bedrock.invoke_model", "bedrock.invoke_model_stream"]
    for step in steps:
        assert step.name == f"chat {MODEL}" and step.attrs[A.GEN_AI_PROVIDER_NAME] == "aws.bedrock"
        assert (step.attrs[A.GEN_AI_USAGE_INPUT_TOKENS], step.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (14, 6)
        assert step.attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["end_turn"]
    assert steps[0].attrs[A.GEN_AI_RESPONSE_ID] == "msg_bdrk_01FakeId"
