"""A fake Amazon Bedrock runtime on 127.0.0.1: Converse and InvokeModel (JSON; InvokeModel in
Anthropic's Messages format), ConverseStream and InvokeModelWithResponseStream (the binary AWS event
stream, sent in chunked transfer encoding, one message a chunk), as boto3 expects them.

The event-stream messages are written here with ``struct`` and ``zlib.crc32`` (prelude, string
headers, JSON payload, both CRCs), independently of the code under test. The answer echoes the last
user text; model ``validation-error`` gets Bedrock's 400 ``ValidationException``. Every request and
byte is counted, with its headers (so a test can see the signature was sent live).
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .counting_http import Counter, CountingHandler, counting_http

USAGE = {"inputTokens": 21, "outputTokens": 9, "totalTokens": 30}


def event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One event-stream message as Bedrock writes it."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        raw = value.encode()
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw
    body = json.dumps(payload, separators=(",", ":")).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def _text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return " ".join(str(part.get("text", "")) for part in message.get("content") or [])
    return ""


def _pieces(text: str, tiny: bool) -> list[str]:
    """Bedrock's deltas: a word each (the space before it kept), or with ``tiny`` 4 characters each."""
    if tiny:
        return [text[i : i + 4] for i in range(0, len(text), 4)]
    return [word if i == 0 else " " + word for i, word in enumerate(text.split(" "))]


def stream_events(body: dict[str, Any], tiny: bool = False) -> list[bytes]:
    """The messages of a ConverseStream answer."""
    messages = [event_message("messageStart", {"role": "assistant", "p": "abcdefgh"})]
    for word in _pieces(f"You said: {_text(body)}", tiny):
        delta = {"contentBlockIndex": 0, "delta": {"text": word}, "p": "abcd"}
        messages.append(event_message("contentBlockDelta", delta))
    messages.append(event_message("contentBlockStop", {"contentBlockIndex": 0, "p": "ab"}))
    messages.append(event_message("messageStop", {"stopReason": "end_turn", "p": "abcdef"}))
    metadata = {"usage": USAGE, "metrics": {"latencyMs": 120}, "p": "abc"}
    messages.append(event_message("metadata", metadata))
    return messages


def _anthropic_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return " ".join(str(part.get("text", "")) for part in content or [])
    return ""


def invoke_answer(body: dict[str, Any]) -> dict[str, Any]:
    """InvokeModel's answer for an Anthropic model: the Messages API's body."""
    return {
        "id": "msg_bdrk_01FakeId",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-haiku-20240307",
        "content": [{"type": "text", "text": f"You said: {_anthropic_text(body)}"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 14, "output_tokens": 6},
    }


def invoke_stream_chunks(body: dict[str, Any], tiny: bool = False) -> list[dict[str, Any]]:
    """The model's own stream events that InvokeModelWithResponseStream wraps, one a message."""
    message = {
        **invoke_answer(body),
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 14, "output_tokens": 1},
    }
    chunks: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    chunks.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    for word in _pieces(f"You said: {_anthropic_text(body)}", tiny):
        delta = {"type": "text_delta", "text": word}
        chunks.append({"type": "content_block_delta", "index": 0, "delta": delta})
    chunks.append({"type": "content_block_stop", "index": 0})
    stop = {"stop_reason": "end_turn", "stop_sequence": None}
    chunks.append({"type": "message_delta", "delta": stop, "usage": {"output_tokens": 6}})
    metrics = {"inputTokenCount": 14, "outputTokenCount": 6, "invocationLatency": 300, "firstByteLatency": 90}
    chunks.append({"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics})
    return chunks


def invoke_stream_events(body: dict[str, Any], tiny: bool = False) -> list[bytes]:
    """The messages of an InvokeModelWithResponseStream answer: each chunk's JSON in base64."""
    encoded = [
        base64.b64encode(json.dumps(c, separators=(",", ":")).encode()).decode()
        for c in invoke_stream_chunks(body, tiny)
    ]
    return [event_message("chunk", {"bytes": b, "p": "abcd"}) for b in encoded]


class _Bedrock(CountingHandler):
    def _event_stream(self, messages: list[bytes], headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for message in messages:
            self.wfile.write(b"%x\r\n%b\r\n" % (len(message), message))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_POST(self) -> None:
        body = json.loads(self.body() or b"{}")
        parts = self.path.split("?")[0].split("/")  # /model/{modelId}/{operation}
        model, operation = parts[2], parts[3]
        request_id = {"x-amzn-RequestId": "5c6d0f3e-0000-4000-8000-000000000001"}
        if model == "validation-error":
            error = {"message": "The provided model identifier is invalid."}
            headers = {**request_id, "x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/"}
            self.reply(400, "application/json", json.dumps(error).encode(), headers)
        elif operation == "converse":
            answer = {
                "output": {"message": {"role": "assistant", "content": [{"text": f"You said: {_text(body)}"}]}},
                "stopReason": "end_turn",
                "usage": USAGE,
                "metrics": {"latencyMs": 120},
            }
            self.reply(200, "application/json", json.dumps(answer).encode(), request_id)
        elif operation == "converse-stream":
            self._event_stream(stream_events(body, "tiny" in model), request_id)
        elif operation == "invoke":
            self.reply(200, "application/json", json.dumps(invoke_answer(body)).encode(), request_id)
        elif operation == "invoke-with-response-stream":
            self._event_stream(invoke_stream_events(body, "tiny" in model), request_id)
        else:
            self.reply(404, "application/json", b'{"message": "unknown operation"}')


@contextmanager
def bedrock_server() -> Iterator[Counter]:
    """The fake Bedrock runtime on a free loopback port for the block."""
    with counting_http(_Bedrock) as counter:
        yield counter
