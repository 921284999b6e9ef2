"""The AWS event stream (``application/vnd.amazon.eventstream``): Bedrock's streamed responses.

A binary framing. Each message is a prelude (total length and headers length, 4 bytes each,
big-endian, then the CRC32 of those 8 bytes), the headers (name length, name, a type byte and a
value of that type), the payload, and the CRC32 of everything before it. On the tape a message is
readable JSON::

    {"offset": 0.01,
     "headers": {":event-type": "contentBlockDelta", ":content-type": "application/json",
                 ":message-type": "event"},
     "payload": {"contentBlockIndex": 0, "delta": {"text": "Hello"}, "p": "abcd"}}

A string header is its value; any other type is ``{"type": ..., "value": ...}`` (bytes in base64, a
UUID in hex). The payload is JSON when writing it back compactly gives the very bytes, else its exact
``text``, else its ``base64``. Encoding writes the prelude and both CRCs again, so a message comes
back byte for byte; one that did not check out when it arrived (a bad CRC, a cut stream) is kept as
``raw`` base64 and given back as it was.
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from ._framing import Splitter

_PRELUDE = 12
_TYPES = ("true", "false", "byte", "short", "integer", "long", "bytes", "string", "timestamp", "uuid")
_INTS = {"byte": ">b", "short": ">h", "integer": ">i", "long": ">q", "timestamp": ">q"}


class FormatError(ValueError):
    """Bytes that are not an event-stream message."""


def _headers(data: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1 : at + 1 + size].decode("utf-8")
        at += 1 + size
        kind = _TYPES[data[at]]
        at += 1
        value: Any
        if kind in ("true", "false"):
            value = {"type": "boolean", "value": kind == "true"}
        elif kind in _INTS:
            fmt = _INTS[kind]
            width = struct.calcsize(fmt)
            value = {"type": kind, "value": struct.unpack(fmt, data[at : at + width])[0]}
            at += width
        elif kind == "uuid":
            value = {"type": "uuid", "value": data[at : at + 16].hex()}
            at += 16
        else:
            (length,) = struct.unpack(">H", data[at : at + 2])
            raw = data[at + 2 : at + 2 + length]
            at += 2 + length
            if kind == "string":
                value = raw.decode("utf-8")
            else:
                value = {"type": "bytes", "value": base64.b64encode(raw).decode()}
        if name in out:
            raise FormatError(f"header {name!r} twice")
        out[name] = value
    return out


def _encode_headers(headers: dict[str, Any]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        encoded = name.encode("utf-8")
        out += bytes([len(encoded)]) + encoded
        if isinstance(value, str):
            raw = value.encode("utf-8")
            out += bytes([7]) + struct.pack(">H", len(raw)) + raw
            continue
        kind, inner = value["type"], value["value"]
        if kind == "boolean":
            out += bytes([0 if inner else 1])
        elif kind in _INTS:
            out += bytes([_TYPES.index(kind)]) + struct.pack(_INTS[kind], inner)
        elif kind == "uuid":
            out += bytes([9]) + uuid.UUID(hex=inner).bytes
        else:
            raw = base64.b64decode(inner)
            out += bytes([6]) + struct.pack(">H", len(raw)) + raw
    return bytes(out)


def decode(message: bytes) -> dict[str, Any]:
    """One whole message as its tape event (without ``offset``); ``raw`` when it does not check out."""
    try:
        total, header_length, prelude_crc = struct.unpack(">III", message[:_PRELUDE])
        if total != len(message) or zlib.crc32(message[:8]) != prelude_crc:
            raise FormatError("bad prelude")
        if zlib.crc32(message[:-4]) != struct.unpack(">I", message[-4:])[0]:
            raise FormatError("bad message CRC")
        headers = _headers(message[_PRELUDE : _PRELUDE + header_length])
    except (FormatError, struct.error, IndexError, UnicodeDecodeError):
        return {"raw": base64.b64encode(message).decode("ascii")}
    event: dict[str, Any] = {"headers": headers}
    payload = message[_PRELUDE + header_length : -4]
    if payload:
        event.update(_payload(payload))
    if encode(event) != message:  # anything the JSON cannot say exactly (a duplicate key …) stays raw
        return {"raw": base64.b64encode(message).decode("ascii")}
    return event


def _payload(payload: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(payload)
        if orjson.dumps(value) == payload:
            return {"payload": value}
    except orjson.JSONDecodeError:
        pass
    try:
        return {"text": payload.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(payload).decode("ascii")}


def encode(event: dict[str, Any]) -> bytes:
    """The exact bytes of a tape event: prelude, headers, payload and both CRCs."""
    raw = event.get("raw")
    if isinstance(raw, str):
        return base64.b64decode(raw)
    headers = _encode_headers(event.get("headers") or {})
    if "payload" in event:
        payload = orjson.dumps(event["payload"])
    elif isinstance(event.get("text"), str):
        payload = event["text"].encode("utf-8")
    elif isinstance(event.get("base64"), str):
        payload = base64.b64decode(event["base64"])
    else:
        payload = b""
    total = _PRELUDE + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


class _MessageSplitter:
    """Cuts the stream at each message's total length, whatever the chunks."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._pending += chunk
        events: list[dict[str, Any]] = []
        while len(self._pending) >= _PRELUDE:
            (total,) = struct.unpack(">I", self._pending[:4])
            if total < _PRELUDE + 4:  # not a message: keep the rest as it is
                return events
            if len(self._pending) < total:
                return events
            events.append(decode(bytes(self._pending[:total])))
            del self._pending[:total]
        return events

    def rest(self) -> list[dict[str, Any]]:
        rest = bytes(self._pending)
        self._pending.clear()
        return [{"raw": base64.b64encode(rest).decode("ascii")}] if rest else []


@dataclass(frozen=True)
class AwsEventStream:
    """``application/vnd.amazon.eventstream`` (Bedrock's ``converse-stream`` and
    ``invoke-with-response-stream``)."""

    name: str = "aws-eventstream"
    content_types: tuple[str, ...] = ("application/vnd.amazon.eventstream",)

    def splitter(self) -> Splitter:
        return _MessageSplitter()

    def encode(self, event: dict[str, Any]) -> bytes:
        return encode(event)

    def payload(self, event: dict[str, Any]) -> Any:
        """The event's JSON payload (``{"bytes": ...}`` of ``invoke-with-response-stream`` as it is)."""
        value = event.get("payload")
        return value if isinstance(value, dict) else None


AWS_EVENT_STREAM = AwsEventStream()
