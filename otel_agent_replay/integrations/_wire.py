"""A model response as a step's result, and back: status, allow-listed headers, JSON body or SSE events.

The result is plain JSON::

    {"status": 200, "headers": {"content-type": "application/json", ...}, "body": {...}}
    {"status": 200, "headers": {"content-type": "text/event-stream"},
     "events": [{"offset": 0.01, "text": "data: ...\\n\\n"}]}

``text`` (instead of ``body``) holds a response that is not JSON. Events keep their exact text,
separators included, so a replayed stream has the recorded bytes.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

import orjson

from otel_agent_replay.instrumentation import due_in

RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "x-request-id",
        "request-id",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "openai-model",
        "openai-processing-ms",
        "openai-version",
    }
)
"""Response headers kept on the tape (with the ``x-ratelimit-`` and ``anthropic-ratelimit-`` families)."""
_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")

_log = logging.getLogger(__name__)
_EVENT_END = re.compile(r"\r\n\r\n|\n\n|\r\r")


def kept_headers(headers: Any) -> dict[str, str]:
    """The allow-listed headers of a response, lower-cased names (credentials are never among them)."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        if low in RESPONSE_HEADERS or low.startswith(_HEADER_PREFIXES):
            kept[low] = value
    return kept


def is_event_stream(headers: Any) -> bool:
    return str(headers.get("content-type", "")).split(";")[0].strip().lower() == "text/event-stream"


_LAYOUTS: dict[str, Callable[[Any], bytes]] = {
    "compact": orjson.dumps,
    "spaced": lambda v: json.dumps(v).encode(),
    "spaced-utf8": lambda v: json.dumps(v, ensure_ascii=False).encode(),
    "indent2": lambda v: orjson.dumps(v, option=orjson.OPT_INDENT_2),
    "indent2-ascii": lambda v: json.dumps(v, indent=2).encode(),
}
"""How a provider may have written its JSON: the one that gives back the exact bytes is recorded."""


def _layout_of(value: Any, content: bytes) -> tuple[str, bool] | None:
    newline = content.endswith(b"\n")
    target = content[:-1] if newline else content
    for name, dump in _LAYOUTS.items():
        try:
            if dump(value) == target:
                return name, newline
        except (TypeError, ValueError, orjson.JSONEncodeError):
            continue
    return None


def body_result(status: int, headers: dict[str, str], content: bytes) -> dict[str, Any]:
    """A whole (non-streamed) response as a result: its JSON body (with the layout that gives back its
    bytes), else its exact text."""
    result: dict[str, Any] = {"status": status, "headers": headers}
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        body = None
    layout = _layout_of(body, content) if content else None
    if layout is None:
        result["text"] = content.decode("utf-8", "replace")
        return result
    result["body"] = body
    if layout[0] != "compact":
        result["layout"] = layout[0]
    if layout[1]:
        result["newline"] = True
    return result


class EventRecorder:
    """Splits a live event stream into events as its chunks arrive, each with its offset."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.events: list[dict[str, Any]] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""

    def feed(self, chunk: bytes) -> None:
        self._pending += self._decoder.decode(chunk)
        offset = round(time.monotonic() - self.started, 6)
        while True:
            found = _EVENT_END.search(self._pending)
            if found is None:
                return
            self.events.append({"offset": offset, "text": self._pending[: found.end()]})
            self._pending = self._pending[found.end() :]

    def result(self, status: int, headers: dict[str, str]) -> dict[str, Any]:
        rest = self._pending + self._decoder.decode(b"", final=True)
        if rest:
            self.events.append({"offset": round(time.monotonic() - self.started, 6), "text": rest})
            self._pending = ""
        return {"status": status, "headers": headers, "events": self.events}


def event_data(result: dict[str, Any]) -> Iterator[Any]:
    """The JSON ``data:`` payloads of a recorded stream's events, in order (others skipped)."""
    for event in result.get("events") or ():
        text = event.get("text") if isinstance(event, dict) else None
        if not isinstance(text, str):
            continue
        data = "\n".join(line[5:].lstrip(" ") for line in text.splitlines() if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        try:
            yield orjson.loads(data)
        except orjson.JSONDecodeError:
            continue


def _offsets(result: dict[str, Any]) -> list[int]:
    """Each recorded event's offset in ns (0 where it has none), one per chunk of ``_chunks``."""
    out: list[int] = []
    for event in result.get("events") or ():
        if isinstance(event, dict):
            offset = event.get("offset")  # seconds
            out.append(round(offset * 1e9) if isinstance(offset, (int, float)) and not isinstance(offset, bool) else 0)
    return out


def _wait(offsets: list[int] | None, n: int, start_ns: int) -> float:
    """Seconds until chunk ``n`` is due, when paced; 0 when unpaced."""
    return due_in(start_ns, offsets[n]) if offsets is not None and n < len(offsets) else 0.0


def _chunks(result: dict[str, Any]) -> list[bytes]:
    events = result.get("events")
    if isinstance(events, list):
        return [str(e.get("text", "")).encode("utf-8") for e in events if isinstance(e, dict)]
    if "text" in result:
        return [str(result["text"]).encode("utf-8")]
    if "body" not in result:
        return []
    dump = _LAYOUTS.get(str(result.get("layout", "compact")), orjson.dumps)
    return [dump(result.get("body")) + (b"\n" if result.get("newline") else b"")]


_stream_classes: dict[str, type] = {}


def _replay_stream_class(module: ModuleType) -> type:
    """A byte stream of ``module`` (httpx or httpx2) yielding recorded chunks, sync and async."""
    cls = _stream_classes.get(module.__name__)
    if cls is None:

        class ReplayStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, chunks: list[bytes], offsets: list[int] | None) -> None:
                self._chunks = chunks
                self._offsets = offsets  # ns from the stream's start, when paced

            def __iter__(self) -> Iterator[bytes]:
                start = time.monotonic_ns()
                for n, chunk in enumerate(self._chunks):
                    wait = _wait(self._offsets, n, start)
                    if wait > 0:
                        time.sleep(wait)
                    yield chunk

            async def __aiter__(self) -> AsyncIterator[bytes]:
                start = time.monotonic_ns()
                for n, chunk in enumerate(self._chunks):
                    wait = _wait(self._offsets, n, start)
                    if wait > 0:
                        await asyncio.sleep(wait)
                    yield chunk

        cls = _stream_classes[module.__name__] = ReplayStream
    return cls


def build_response(module: ModuleType, result: object, request: Any, *, pace: bool = False) -> Any:
    """The ``module.Response`` a recorded result stands for: status, headers, the recorded bytes;
    with ``pace``, an event stream's events come at their recorded offsets."""
    if not isinstance(result, dict) or not isinstance(result.get("status"), int):
        raise ValueError(f"not a recorded HTTP response: {str(result)[:200]!r}")
    headers = result.get("headers") if isinstance(result.get("headers"), dict) else {}
    chunks = _chunks(result)
    if "events" in result:
        stream = _replay_stream_class(module)(chunks, _offsets(result) if pace else None)
        return module.Response(result["status"], headers=headers, stream=stream, request=request)
    return module.Response(result["status"], headers=headers, content=b"".join(chunks), request=request)


def live_stream_class(module: ModuleType) -> type:
    """A byte stream of ``module`` that passes a live stream through, chunk by chunk, while recording it."""
    key = module.__name__ + ":live"
    cls = _stream_classes.get(key)
    if cls is None:

        class RecordingStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, inner: Any, recorder: EventRecorder, done: Callable[[], None]) -> None:
                self._inner = inner
                self._recorder = recorder
                self._done = done
                self._finished = False

            def finish(self) -> None:
                """End the step with what arrived so far (once; later calls do nothing)."""
                if not self._finished:
                    self._finished = True
                    try:
                        self._done()
                    except Exception:  # recording must never break the caller's stream
                        _log.exception("could not record a model call's event stream")

            def __iter__(self) -> Iterator[bytes]:
                for chunk in self._inner:
                    self._recorder.feed(chunk)
                    yield chunk

            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in self._inner:
                    self._recorder.feed(chunk)
                    yield chunk

            def close(self) -> None:
                try:
                    self._inner.close()
                finally:
                    self.finish()

            async def aclose(self) -> None:
                try:
                    await self._inner.aclose()
                finally:
                    self.finish()

        cls = _stream_classes[key] = RecordingStream
    return cls
