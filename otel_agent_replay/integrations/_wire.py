"""A response as a step's result, and back: status, allow-listed headers, and the body or the events.

The result is plain JSON::

    {"status": 200, "headers": {"content-type": "application/json", ...}, "body": {...}}
    {"status": 200, "headers": {...}, "text": "..."}                 # not JSON (exact text)
    {"status": 200, "headers": {...}, "base64": "...", "sha256": "..."}   # not UTF-8 text
    {"status": 200, "headers": {"content-type": "text/event-stream"}, "framing": "sse",
     "events": [{"offset": 0.01, "text": "data: ...\\n\\n"}]}

A JSON body keeps the layout that gives back its exact bytes (``layout``, ``newline``); events keep
what their framing needs to be written again byte for byte (``_framing``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import orjson

from ._framing import Framing, framing_of

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
        "x-amzn-requestid",
        "x-amzn-errortype",
        "location",
        "etag",
        "last-modified",
        "cache-control",
    }
)
"""Response headers kept on the tape (with the ``x-ratelimit-`` and ``anthropic-ratelimit-`` families);
credentials (``set-cookie``, tokens) are never among them."""
_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")


def kept_headers(headers: Any) -> dict[str, str]:
    """The allow-listed headers of a response, lower-cased names."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        low = str(name).lower()
        if low in RESPONSE_HEADERS or low.startswith(_HEADER_PREFIXES):
            kept[low] = str(value)
    return kept


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
    """A whole response as a result: its JSON body (with the layout that gives back its bytes), else
    its exact text, else (not UTF-8) its bytes in base64 with their digest."""
    result: dict[str, Any] = {"status": status, "headers": headers}
    if not content:
        return result
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        layout = None
    else:
        layout = _layout_of(body, content)
    if layout is not None:
        result["body"] = body
        if layout[0] != "compact":
            result["layout"] = layout[0]
        if layout[1]:
            result["newline"] = True
        return result
    try:
        result["text"] = content.decode("utf-8")
    except UnicodeDecodeError:
        result["base64"] = base64.b64encode(content).decode("ascii")
        result["sha256"] = hashlib.sha256(content).hexdigest()
    return result


class StreamRecorder:
    """Cuts a live stream into events in its framing as its chunks arrive, each with its offset."""

    def __init__(self, framing: Framing, started: float) -> None:
        self.framing = framing
        self.started = started
        self.events: list[dict[str, Any]] = []
        self._splitter = framing.splitter()

    def _offset(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def feed(self, chunk: bytes) -> None:
        events = self._splitter.feed(chunk)
        if events:
            offset = self._offset()
            self.events.extend({"offset": offset, **event} for event in events)

    def result(self, status: int, headers: dict[str, str]) -> dict[str, Any]:
        rest = self._splitter.rest()
        if rest:
            offset = self._offset()
            self.events.extend({"offset": offset, **event} for event in rest)
        result: dict[str, Any] = {"status": status, "headers": headers}
        if self.framing.name != "sse":
            result["framing"] = self.framing.name
        result["events"] = self.events
        return result


def is_stream(result: object) -> bool:
    """Whether a recorded result is a stream of events."""
    return isinstance(result, dict) and isinstance(result.get("events"), list)


def offsets_ns(result: dict[str, Any]) -> list[int]:
    """Each recorded event's offset in ns (0 where it has none), one per chunk of ``chunks``."""
    out: list[int] = []
    for event in result.get("events") or ():
        if isinstance(event, dict):
            offset = event.get("offset")  # seconds
            out.append(round(offset * 1e9) if isinstance(offset, (int, float)) and not isinstance(offset, bool) else 0)
    return out


def chunks(result: dict[str, Any]) -> list[bytes]:
    """The recorded bytes of a response: one chunk per event of a stream, else the whole body."""
    events = result.get("events")
    if isinstance(events, list):
        framing = framing_of(result)
        return [framing.encode(e) for e in events if isinstance(e, dict)]
    if "text" in result:
        return [str(result["text"]).encode("utf-8")]
    if "base64" in result:
        return [base64.b64decode(str(result["base64"]))]
    if "body" not in result:
        return []
    dump = _LAYOUTS.get(str(result.get("layout", "compact")), orjson.dumps)
    return [dump(result.get("body")) + (b"\n" if result.get("newline") else b"")]


def check_result(result: object) -> dict[str, Any]:
    """A recorded HTTP response, or ``ValueError`` saying what it is instead."""
    if not isinstance(result, dict) or not isinstance(result.get("status"), int):
        raise ValueError(f"not a recorded HTTP response: {str(result)[:200]!r}")
    return result


def result_headers(result: dict[str, Any]) -> dict[str, str]:
    """A recorded response's headers (none when the tape holds something else)."""
    headers = result.get("headers")
    return {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}
