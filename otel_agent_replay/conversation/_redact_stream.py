"""A recorded HTTP stream read as the text it carries before anything is built from it.

A model streams its answer in pieces: ``choices[].delta.content`` (OpenAI chat), ``delta`` (OpenAI
responses), ``delta.text`` and ``delta.partial_json`` (Anthropic, and Bedrock's ConverseStream),
``candidates[].content.parts[].text`` (Gemini), ``message.content`` and ``response`` (Ollama's NDJSON),
the model's own events in base64 under ``bytes`` (Bedrock's InvokeModelWithResponseStream). A secret
split over pieces is in no piece whole, so no scan of one event finds it, and every reader that joins
the pieces (``gen_ai.output.messages``, ``show --conversation``, a store row) would put it back
together.

``redact_stream(result, scan)`` joins the pieces of each channel (one delta field of one choice,
content block or output item), scans the joined text with ``scan`` (a ``Redactor``'s
``redact_text``), and where the scan changed it writes the change back into the events: the
replacement goes into the event where the changed run starts and the replaced characters leave every
event, so the events, joined, are the scanned text. Each changed event is written again in its
framing (its SSE ``data:`` line, its NDJSON line, its event-stream payload, the base64 of a wrapped
event), so a replay gives the client a stream it reads as it read the live one; an event that did not
change is kept as it was. Only the fields above are joined: ids, model names and Bedrock's random
``p`` padding repeat in every event and are never glued together.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections.abc import Callable, Mapping
from difflib import SequenceMatcher
from typing import Any, Final

import orjson

__all__ = ["redact_stream"]

Scan = Callable[[str], str]

_DELTA_PATHS: Final = frozenset(
    {
        ("choices", "*", "delta", "content"),
        ("choices", "*", "delta", "refusal"),
        ("choices", "*", "delta", "reasoning_content"),
        ("choices", "*", "delta", "reasoning"),
        ("choices", "*", "delta", "tool_calls", "*", "function", "arguments"),
        ("choices", "*", "text"),
        ("delta",),
        ("delta", "text"),
        ("delta", "partial_json"),
        ("delta", "thinking"),
        ("delta", "toolUse", "input"),
        ("delta", "reasoningContent", "text"),
        ("delta", "message", "content", "text"),
        ("delta", "message", "tool_calls", "function", "arguments"),
        ("candidates", "*", "content", "parts", "*", "text"),
        ("message", "content"),
        ("message", "thinking"),
        ("response",),
        ("thinking",),
    }
)
"""Where a streamed piece of text sits in an event (list positions as ``*``)."""

_CHANNEL_FIELDS: Final = ("type", "index", "contentBlockIndex", "output_index", "content_index", "item_id")
"""The fields of an event that say which output its piece belongs to (a choice, a block, an item)."""

_MIN_JOINED: Final = 8
_MAX_ALIGN: Final = 4_000
"""The longest changed run aligned piece by piece; a longer one goes whole into its first event."""
_MIN_KEPT: Final = 12
"""The shortest run of text between two changes that stays in its own events."""

Ref = tuple[int, Any, Any]  # (event number, container, key)


class _Event:
    """One event's JSON, decoded for reading and for writing back."""

    __slots__ = ("changed", "payload", "wrapped")

    def __init__(self, payload: Any, wrapped: bool) -> None:
        self.payload = payload
        self.wrapped = wrapped
        self.changed = False


def _sse_data(text: str) -> Any:
    data = "\n".join(line[5:].lstrip(" ") for line in text.splitlines() if line.startswith("data:"))
    if not data or data[0] not in "{[":
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _decode(event: Any, framing: str) -> _Event | None:
    if not isinstance(event, Mapping):
        return None
    if framing == "aws-eventstream":
        payload = event.get("payload")
        if not isinstance(payload, Mapping):
            return None
        inner = payload.get("bytes")
        if isinstance(inner, str):  # invoke-with-response-stream: the model's own event, in base64
            try:
                value = orjson.loads(base64.b64decode(inner, validate=True))
            except (binascii.Error, ValueError):
                return None
            return _Event(value, True) if isinstance(value, dict) else None
        return _Event(orjson.loads(orjson.dumps(payload)), False)
    text = event.get("text")
    if not isinstance(text, str):
        return None
    if framing == "ndjson":
        stripped = text.strip()
        if not stripped.startswith("{"):
            return None
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return None
        return _Event(value, False)
    value = _sse_data(text)
    return _Event(value, False) if isinstance(value, dict) else None


def _encode(event: Mapping[str, Any], decoded: _Event, framing: str) -> dict[str, Any]:
    """``event`` written again with its changed JSON, in its framing."""
    out = dict(event)
    data = orjson.dumps(decoded.payload).decode("utf-8")
    if framing == "aws-eventstream":
        if decoded.wrapped:
            out["payload"] = {**event["payload"], "bytes": base64.b64encode(data.encode("utf-8")).decode("ascii")}
        else:
            out["payload"] = decoded.payload
        return out
    text = str(event["text"])
    if framing == "ndjson":
        out["text"] = data + text[len(text.rstrip()) :]
        return out
    lines = text.split("\n")
    kept: list[str] = []
    written = False
    for line in lines:
        if line.startswith("data:"):
            if not written:
                kept.append("data: " + data + ("\r" if line.endswith("\r") else ""))
                written = True
            continue
        kept.append(line)
    out["text"] = "\n".join(kept)
    return out


def _channel(payload: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(
        value if isinstance(value, (str, int)) else None for value in (payload.get(f) for f in _CHANNEL_FIELDS)
    )


def _collect(
    node: Any,
    path: tuple[Any, ...],
    where: tuple[int, ...],
    n: int,
    channel: tuple[Any, ...],
    groups: dict[Any, list[Ref]],
) -> None:
    """The delta strings under ``node`` into ``groups``, by (path, list positions, channel)."""
    if type(node) is dict:
        for name, value in node.items():
            step = (*path, name)
            if type(value) is str:
                if step in _DELTA_PATHS and value:
                    groups.setdefault((step, where, channel), []).append((n, node, name))
            elif type(value) in (dict, list):
                _collect(value, step, where, n, channel, groups)
    elif type(node) is list:
        for at, value in enumerate(node):
            if type(value) in (dict, list):
                _collect(value, (*path, "*"), (*where, at), n, channel, groups)


def _write_back(pieces: list[str], joined: str, redacted: str) -> list[str]:
    """The pieces of ``joined`` changed so that, joined, they are ``redacted``."""
    starts: list[int] = []
    at = 0
    for piece in pieces:
        starts.append(at)
        at += len(piece)
    out: list[list[str]] = [[] for _ in pieces]

    def owner(pos: int) -> int:
        return max(0, bisect.bisect_right(starts, pos) - 1)

    def keep(i1: int, i2: int) -> None:
        pos = i1
        while pos < i2:
            n = owner(pos)
            end = min(i2, starts[n] + len(pieces[n]))
            out[n].append(joined[pos:end])
            pos = end

    def put(i1: int, text: str) -> None:
        if text:
            out[owner(i1) if i1 < len(joined) else len(pieces) - 1].append(text)

    head = 0
    limit = min(len(joined), len(redacted))
    while head < limit and joined[head] == redacted[head]:
        head += 1
    tail = 0
    while tail < limit - head and joined[-1 - tail] == redacted[-1 - tail]:
        tail += 1
    keep(0, head)
    old_end, new_end = len(joined) - tail, len(redacted) - tail
    if old_end - head > _MAX_ALIGN or new_end - head > _MAX_ALIGN:
        put(head, redacted[head:new_end])
    else:
        # text kept between two changes is a run both share of some length; shorter common runs (a
        # placeholder's letters that happen to be in the secret) belong to the replacement
        matcher = SequenceMatcher(None, joined[head:old_end], redacted[head:new_end], autojunk=False)
        i = j = 0
        for a, b, size in matcher.get_matching_blocks():
            if size < _MIN_KEPT and size:
                continue
            put(head + i, redacted[head + j : head + b])
            keep(head + a, head + a + size)
            i, j = a + size, b + size
    keep(old_end, len(joined))
    return ["".join(parts) for parts in out]


def _events_of(result: Mapping[str, Any]) -> tuple[list[Any], str] | None:
    if type(result.get("status")) is not int or not isinstance(result.get("headers"), Mapping):
        return None  # not a recorded HTTP response (``integrations._wire``)
    events = result.get("events")
    if isinstance(events, list):
        framing = result.get("framing")
        return events, framing if isinstance(framing, str) else "sse"
    body = result.get("body")
    if isinstance(body, list) and body and all(isinstance(item, dict) for item in body):
        return body, "body"  # Gemini's stream without alt=sse: one JSON array of its chunks
    return None


def redact_stream(result: Any, scan: Scan) -> Any:
    """``result`` (a recorded HTTP response) with each streamed channel's joined text scanned by ``scan``
    and the change written back into its events; ``result`` itself when it is no stream or nothing
    changed."""
    if not isinstance(result, Mapping):
        return result
    found = _events_of(result)
    if found is None:
        return result
    events, framing = found
    decoded: dict[int, _Event] = {}
    groups: dict[Any, list[Ref]] = {}
    for n, event in enumerate(events):
        item = _Event(orjson.loads(orjson.dumps(event)), False) if framing == "body" else _decode(event, framing)
        if item is None or not isinstance(item.payload, dict):
            continue
        decoded[n] = item
        _collect(item.payload, (), (), n, _channel(item.payload), groups)
    for refs in groups.values():
        if len(refs) < 2:
            continue
        pieces = [container[key] for _, container, key in refs]
        joined = "".join(pieces)
        if len(joined) < _MIN_JOINED:
            continue
        redacted = scan(joined)
        if redacted == joined:
            continue
        for (n, container, key), old, new in zip(refs, pieces, _write_back(pieces, joined, redacted), strict=True):
            if new != old:
                container[key] = new
                decoded[n].changed = True
    if not any(item.changed for item in decoded.values()):
        return result
    out = list(events)
    for n, item in decoded.items():
        if item.changed:
            out[n] = item.payload if framing == "body" else _encode(events[n], item, framing)
    return {**result, ("body" if framing == "body" else "events"): out}
