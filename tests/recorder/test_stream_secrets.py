"""Issue 30: a streamed answer is scanned as its assembled text in every framing the integrations know,
before any field is built from it.

Each framing is driven by its real SDK against the fake provider servers in ``tests/helpers``, which
stream the answer in 4-character deltas (models named ``tiny…``), so every secret in it is split
across events: SSE of OpenAI chat (with spaces, and ``tiny-bare``: deltas with no space at all),
OpenAI responses, Anthropic and Gemini; Ollama's NDJSON (chat and generate); Bedrock's ConverseStream
and InvokeModelWithResponseStream over the binary AWS event stream. No whole secret reaches the tape,
the store, OTLP with content on or ``show --conversation``, nor the answer the tape's events add up
to; the live agent still got every secret, and the redacted stream replays as a stream the SDK reads.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import boto3
import botocore.config
import ollama
import openai
import pytest
from google import genai
from google.genai import types
from helpers.bedrock_server import bedrock_server
from helpers.gemini_server import fake_gemini
from helpers.model_server import fake_provider
from helpers.ollama_server import fake_ollama
from helpers.otlp_receiver import http_receiver
from helpers.secret_corpus import CORPUS
from helpers.secrets import ANTHROPIC, AWS_KEY_ID, GITHUB_CLASSIC, JWT, OPENAI_PROJECT, SLACK_BOT, json_forms

from otel_agent_replay import agent_run, load_tape, record, replay
from otel_agent_replay.cli import main
from otel_agent_replay.conversation import assemble, dumps, said_messages
from otel_agent_replay.core import attributes as A

_TOKENS = [sample for sample in CORPUS if sample.name in ("vault", "databricks", "groq", "linear", "notion")]
SECRETS = [GITHUB_CLASSIC, OPENAI_PROJECT, ANTHROPIC, SLACK_BOT, JWT, AWS_KEY_ID, *(s.secret for s in _TOKENS)]
TEXT = " ; ".join(
    [
        f"deploy with {GITHUB_CLASSIC}",
        f"key '{OPENAI_PROJECT}'",
        f"x-api-key: {ANTHROPIC}",
        f"slack bot {SLACK_BOT}",
        f"id_token is {JWT} (expires soon)",
        f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID}",
        *(s.text for s in _TOKENS),
    ]
)
BARE = ",".join(SECRETS)  # streamed by "tiny-bare": not one delta holds a space
assert " " not in BARE


def _leaks(data: bytes) -> list[str]:
    return [secret[:8] for secret in SECRETS if any(form in data for form in json_forms(secret))]


@dataclass(frozen=True)
class Servers:
    openai: str
    anthropic: str
    gemini: str
    ollama: str
    bedrock: str


@contextmanager
def _servers() -> Iterator[Servers]:
    with ExitStack() as stack:
        fp = stack.enter_context(fake_provider())
        gemini = stack.enter_context(fake_gemini())
        olla = stack.enter_context(fake_ollama())
        bedrock = stack.enter_context(bedrock_server())
        yield Servers(fp.openai_url, fp.url, gemini.url, olla.url, bedrock.url)


def _openai_chat(s: Servers, model: str, text: str) -> str:
    client = openai.OpenAI(base_url=s.openai, api_key="sk-test-" + "stream0123456789abcdef", max_retries=0)
    messages: Any = [{"role": "user", "content": text}]
    stream = client.chat.completions.create(model=model, messages=messages, stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def _openai_responses(s: Servers) -> str:
    client = openai.OpenAI(base_url=s.openai, api_key="sk-test-" + "stream0123456789abcdef", max_retries=0)
    stream = client.responses.create(model="tiny", input=TEXT, stream=True)
    return "".join(event.delta for event in stream if event.type == "response.output_text.delta")


def _anthropic(s: Servers) -> str:
    client = anthropic.Anthropic(base_url=s.anthropic, api_key="sk-ant-test-" + "0123456789", max_retries=0)
    messages: Any = [{"role": "user", "content": TEXT}]
    with client.messages.stream(model="tiny", max_tokens=100, messages=messages) as stream:
        return "".join(stream.text_stream)


def _gemini(s: Servers) -> str:
    client = genai.Client(api_key="gemini-test-key", http_options=types.HttpOptions(base_url=s.gemini))
    return "".join(chunk.text or "" for chunk in client.models.generate_content_stream(model="tiny", contents=TEXT))


def _ollama_chat(s: Servers) -> str:
    parts = ollama.Client(host=s.ollama).chat(model="tiny", messages=[{"role": "user", "content": TEXT}], stream=True)
    return "".join(part.message.content or "" for part in parts)


def _ollama_generate(s: Servers) -> str:
    parts = ollama.Client(host=s.ollama).generate(model="tiny", prompt=TEXT, stream=True)
    return "".join(part.response for part in parts)


def _bedrock(s: Servers) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=s.bedrock,
        aws_access_key_id="AKIAZ7QW3ERTY5UIOP2L",
        aws_secret_access_key="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",
        config=botocore.config.Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def _bedrock_converse(s: Servers) -> str:
    messages: Any = [{"role": "user", "content": [{"text": TEXT}]}]
    answer = _bedrock(s).converse_stream(modelId="tiny-model", messages=messages)
    return "".join(e["contentBlockDelta"]["delta"]["text"] for e in answer["stream"] if "contentBlockDelta" in e)


def _bedrock_invoke(s: Servers) -> str:
    messages = [{"role": "user", "content": TEXT}]
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": messages}
    answer = _bedrock(s).invoke_model_with_response_stream(modelId="anthropic.tiny-model", body=json.dumps(body))
    said = ""
    for event in answer["body"]:
        chunk = json.loads(event["chunk"]["bytes"])
        if chunk.get("type") == "content_block_delta":
            said += chunk["delta"]["text"]
    return said


FRAMINGS: dict[str, Callable[[Servers], str]] = {
    "openai-chat": lambda s: _openai_chat(s, "tiny-deltas", TEXT),
    "openai-chat-without-spaces": lambda s: _openai_chat(s, "tiny-bare", BARE),
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ollama-chat": _ollama_chat,
    "ollama-generate": _ollama_generate,
    "bedrock-converse-stream": _bedrock_converse,
    "bedrock-invoke-with-response-stream": _bedrock_invoke,
}


def _store_bytes(db: Path) -> bytes:
    out: list[bytes] = []
    with sqlite3.connect(db) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                out.extend(cell if isinstance(cell, bytes) else str(cell).encode("utf-8") for cell in row)
    assert out
    return b"\n".join(out)


@pytest.mark.parametrize("framing", list(FRAMINGS))
def test_no_whole_secret_of_a_split_stream_reaches_any_sink(
    tmp_path: Path, framing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ask = FRAMINGS[framing]
    tape, db = tmp_path / "stream.jsonl", tmp_path / "store.db"
    with _servers() as servers, http_receiver() as (endpoint, got):
        with record(tape, store=str(db), otlp=endpoint, otlp_content=True), agent_run("streams"):
            live = ask(servers)
        assert [s for s in SECRETS if s not in live] == []  # the live agent got every secret, whole
        (step,) = [s for run in load_tape(tape).runs for s in run.steps]
        assert step.result.get("events") or isinstance(step.result.get("body"), list)
        with replay(tape), agent_run("streams"):
            replayed = ask(servers)  # the SDK reads the redacted stream as it read the live one
    assert _leaks(replayed.encode()) == [] and len(replayed) > len(SECRETS)
    assert _leaks(tape.read_bytes()) == []
    assert _leaks(_store_bytes(db)) == []
    sent = b"".join(request.SerializeToString() for request in got.requests)
    assert A.GEN_AI_OUTPUT_MESSAGES.encode() in sent and _leaks(sent) == []
    # what the tape's events add up to, and the messages read from them, hold no whole secret either
    assert _leaks(json.dumps(assemble(step.tool, step.result)).encode()) == []
    said = said_messages(step.tool, step.result, step.attributes)
    assert said and _leaks(dumps(said).encode()) == []
    capsys.readouterr()
    assert main(["show", str(tape), "--conversation", "--full"]) == 0
    shown = capsys.readouterr().out
    assert "assistant" in shown and _leaks(shown.encode()) == []
