"""Streams read as their assembled text: a secret split across chunks is found, and the chunks stay consistent.

A streamed answer reaches capture as a list: a generator's chunks (strings, or chunk objects with
``choices`` or ``delta``), or an HTTP event stream's events (``{"text": "data: {...}\\n\\n"}``, whose
JSON ``data:`` is read as data): ``is_stream`` says which lists are read so. In the items of such a list, the
strings at the same path (``choices/*/delta/content`` of every event, or the chunks themselves) are one
text when they are short (64 characters or fewer on average) and at least one holds a space or a line
break (text, not a list of ids). That text is scanned whole; where it changes, the change is written
back into the pieces: a placeholder goes into the piece where the secret starts and the secret's
characters leave every piece, so the redacted pieces, joined, are the redacted whole.

``assemble(items, scan)`` works in place on a list the walk has already made (its containers are new).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from difflib import SequenceMatcher
from typing import Any, Final

import orjson

__all__ = ["assemble", "is_stream", "sse_data", "sse_text"]

_MEAN_PIECE: Final = 64
_MIN_JOINED: Final = 8
_MAX_DELTA: Final = 32
"""The longest item of a list of strings read as a stream's text deltas."""

Ref = tuple[Any, Any]  # (container, key): where a piece lives


def sse_data(text: str) -> tuple[list[str], int, Any] | None:
    """An event stream event with one JSON ``data:`` line: (its lines, that line's index, the data)."""
    if not text.startswith(("data:", "event:", "id:")) or "data:" not in text:
        return None
    lines = text.split("\n")
    found = [n for n, line in enumerate(lines) if line.startswith("data:")]
    if len(found) != 1:
        return None
    payload = lines[found[0]][5:].lstrip(" ")
    if not payload.startswith(("{", "[")):
        return None
    try:
        return lines, found[0], orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None


def sse_text(lines: list[str], index: int, data: Any) -> str:
    """The event again, with its ``data:`` line written from ``data``."""
    out = list(lines)
    out[index] = "data: " + orjson.dumps(data).decode("utf-8")
    return "\n".join(out)


class _Pieces:
    def __init__(self) -> None:
        self.groups: dict[tuple[Any, ...], list[Ref]] = {}
        self.events: list[tuple[Any, Any, list[str], int, list[Any], bytes]] = []

    def collect(self, node: Any, path: tuple[Any, ...], container: Any, key: Any) -> None:
        kind = type(node)
        if kind is str:
            event = sse_data(node) if node.startswith(("data:", "event:", "id:")) else None
            if event is None:
                self.groups.setdefault(path, []).append((container, key))
                return
            lines, index, data = event
            holder = [data]
            self.events.append((container, key, lines, index, holder, orjson.dumps(data)))
            self.collect(data, (*path, "data:"), holder, 0)
        elif kind is dict:
            for name, value in node.items():
                self.collect(value, (*path, name), node, name)
        elif kind is list:
            for n, value in enumerate(node):
                self.collect(value, (*path, "*"), node, n)


def _write_back(pieces: list[str], joined: str, redacted: str) -> list[str]:
    starts = []
    at = 0
    for piece in pieces:
        starts.append(at)
        at += len(piece)
    out = [[] for _ in pieces]  # type: list[list[str]]

    def owner(pos: int) -> int:
        return max(0, bisect.bisect_right(starts, pos) - 1)

    for tag, i1, i2, j1, j2 in SequenceMatcher(None, joined, redacted, autojunk=False).get_opcodes():
        if tag == "equal":
            pos = i1
            while pos < i2:
                n = owner(pos)
                end = min(i2, starts[n] + len(pieces[n]))
                out[n].append(joined[pos:end])
                pos = end
        elif j2 > j1:
            out[owner(i1) if i1 < len(joined) else len(pieces) - 1].append(redacted[j1:j2])
    return ["".join(parts) for parts in out]


_CHUNK_KEYS: Final = frozenset({"delta", "choices", "content_block", "chunk"})


def is_stream(items: list[Any]) -> bool:
    """Whether a list looks like a stream: chunks of text, an HTTP event stream's events, or chunk objects
    (``choices``/``delta``). A list of records is not read as one text (and costs nothing here)."""
    first = items[0]
    if type(first) is str:
        # a model's streamed deltas are short; a list holding a longer string is data (ids, names), and
        # gluing its items together would make tokens that no item holds (a UUID followed by "red")
        return all(type(item) is str and len(item) <= _MAX_DELTA for item in items)
    if type(first) is dict:
        text = first.get("text")
        if type(text) is str and text.startswith(("data:", "event:", "id:")):
            return True
        return not _CHUNK_KEYS.isdisjoint(first)
    return False


def assemble(items: list[Any], scan: Callable[[str], str]) -> None:
    """Scan the strings at each path of ``items`` as one text; write any change back into the pieces."""
    found = _Pieces()
    for n, item in enumerate(items):
        found.collect(item, (), items, n)
    for refs in found.groups.values():
        if len(refs) < 2:
            continue
        pieces = [container[key] for container, key in refs]
        joined = "".join(pieces)
        if (
            len(joined) < _MIN_JOINED
            or len(joined) > _MEAN_PIECE * len(pieces)
            or not any(" " in piece or "\n" in piece for piece in pieces)
        ):
            continue
        redacted = scan(joined)
        if redacted == joined:
            continue
        for (container, key), piece in zip(refs, _write_back(pieces, joined, redacted), strict=True):
            container[key] = piece
    for container, key, lines, index, holder, before in found.events:
        if orjson.dumps(holder[0]) != before:
            container[key] = sse_text(lines, index, holder[0])
