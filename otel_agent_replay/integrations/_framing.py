"""Stream framings: how a streamed response is cut into events as it arrives, kept on the tape, and
given back byte for byte.

A framing is chosen by the response's content type. Each event is kept as a JSON object with its
``offset`` (seconds from the request's start) and what the framing needs to write it again exactly:

- ``sse`` (``text/event-stream``): ``{"offset", "text"}``, the event's exact text, separator included;
- ``ndjson`` (``application/x-ndjson``, Ollama): ``{"offset", "text"}``, one line with its newline.

More framings (the AWS event stream of Bedrock) register themselves with ``register``. A recorded
result names its framing (``"framing"``); a result without one is an event stream (older tapes).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson


class Framing(Protocol):
    """One way of cutting a stream into events."""

    @property
    def name(self) -> str:
        """How a recorded result names it (``framing``)."""
        ...

    @property
    def content_types(self) -> tuple[str, ...]:
        """The media types it is chosen for."""
        ...

    def splitter(self) -> Splitter:
        """A fresh splitter for one live stream."""
        ...

    def encode(self, event: dict[str, Any]) -> bytes:
        """The exact bytes of a recorded event."""
        ...

    def payload(self, event: dict[str, Any]) -> Any:
        """The JSON an event carries (for GenAI attributes and views), or None."""
        ...


class Splitter(Protocol):
    """Cuts one live stream into events as its chunks arrive."""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """The events completed by this chunk (without offsets)."""
        ...

    def rest(self) -> list[dict[str, Any]]:
        """What is left when the stream ends (a last event without its separator)."""
        ...


class _TextSplitter:
    def __init__(self, end: re.Pattern[str]) -> None:
        self._end = end
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._pending += self._decoder.decode(chunk)
        events: list[dict[str, Any]] = []
        while True:
            found = self._end.search(self._pending)
            if found is None:
                return events
            events.append({"text": self._pending[: found.end()]})
            self._pending = self._pending[found.end() :]

    def rest(self) -> list[dict[str, Any]]:
        rest = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        return [{"text": rest}] if rest else []


def _text(event: dict[str, Any]) -> str:
    text = event.get("text")
    return text if isinstance(text, str) else ""


@dataclass(frozen=True)
class ServerSentEvents:
    """``text/event-stream``: events end with a blank line."""

    name: str = "sse"
    content_types: tuple[str, ...] = ("text/event-stream",)

    def splitter(self) -> Splitter:
        return _TextSplitter(re.compile(r"\r\n\r\n|\n\n|\r\r"))

    def encode(self, event: dict[str, Any]) -> bytes:
        return _text(event).encode("utf-8")

    def payload(self, event: dict[str, Any]) -> Any:
        lines = _text(event).splitlines()
        data = "\n".join(line[5:].lstrip(" ") for line in lines if line.startswith("data:"))
        if not data or data == "[DONE]":
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            return None


@dataclass(frozen=True)
class JsonLines:
    """``application/x-ndjson`` (Ollama): one JSON value a line."""

    name: str = "ndjson"
    content_types: tuple[str, ...] = ("application/x-ndjson", "application/jsonl", "application/json-seq")

    def splitter(self) -> Splitter:
        return _TextSplitter(re.compile(r"\n"))

    def encode(self, event: dict[str, Any]) -> bytes:
        return _text(event).encode("utf-8")

    def payload(self, event: dict[str, Any]) -> Any:
        text = _text(event).strip()
        if not text:
            return None
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return None


SSE = ServerSentEvents()
NDJSON = JsonLines()
_FRAMINGS: dict[str, Framing] = {SSE.name: SSE, NDJSON.name: NDJSON}


def register(framing: Framing) -> None:
    """Add a framing (by its name and content types)."""
    _FRAMINGS[framing.name] = framing


def media_type(headers: Any) -> str:
    """A content type without its parameters, lower-cased."""
    return str(headers.get("content-type", "") or "").split(";")[0].strip().lower()


def framing_for(headers: Any) -> Framing | None:
    """The framing of a response, from its content type (None: not a stream we know)."""
    kind = media_type(headers)
    for framing in _FRAMINGS.values():
        if kind in framing.content_types:
            return framing
    return None


def framing_of(result: dict[str, Any]) -> Framing:
    """The framing a recorded stream was kept in (``sse`` when it names none)."""
    name = result.get("framing")
    return _FRAMINGS.get(name, SSE) if isinstance(name, str) else SSE


def event_payloads(result: dict[str, Any]) -> Iterator[Any]:
    """The JSON each event of a recorded stream carries, in order (events without any skipped)."""
    framing = framing_of(result)
    for event in result.get("events") or ():
        if isinstance(event, dict):
            payload = framing.payload(event)
            if payload is not None:
                yield payload
