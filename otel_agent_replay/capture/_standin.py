"""One tape's stand-ins: markers turned into stand-ins as a recording writes them, and read back.

``StandIns`` is the seam redaction calls (``StandIns.replacement(kind, secret)``): the stand-in itself is
made by ``stand_in_shape`` (``_standin_shape``, which says how and why nothing can be learned from it).

Where a shape cannot be kept, the marker stays: the value under a secret key that is not a string (a
number, an object) is ``[REDACTED]``; text redaction rewrote around the secret (JSON inside a string that
was re-serialised and cannot be matched back) keeps its markers; two secrets with nothing between them
keep theirs. ``StandIns.table`` says which stand-ins the tape holds and the marker each stands for
(``agent_replay.stand_ins`` on a step): ``check`` and the replayer read it (``StandInTable``).
"""

from __future__ import annotations

import hmac
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Final

import orjson

from ._canonical import JSONValue
from ._standin_shape import stand_in_shape

__all__ = ["MARKER", "StandInTable", "StandIns", "stand_in_shape"]

MARKER: Final = re.compile(r"\[REDACTED(?::[A-Za-z0-9_]+)?\]")
"""A redaction marker, as the redactor writes it."""
_ATTEMPTS: Final = 16
"""Stand-ins drawn for one secret before its marker is kept (when its shape has room for so few)."""


class StandIns:
    """One tape's stand-ins: a random key that never leaves the process, and what was made with it."""

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._lock = threading.Lock()
        self._made: dict[str, str] = {}  # stand-in -> the marker it first stood for
        # In memory only, never written: which secret (by its HMAC under the key) each stand-in was drawn
        # for, so that two secrets never share one, and the same secret always gets its own again.
        self._drawn_for: dict[str, bytes] = {}
        self._stand_in_of: dict[bytes, str] = {}

    @property
    def table(self) -> dict[str, str]:
        """Every stand-in made so far and the marker it stands for (a copy)."""
        with self._lock:
            return dict(self._made)

    def replacement(self, kind: str, secret: str) -> str:
        """The stand-in for ``secret``, redacted as ``kind`` (its marker's name, ``""`` for ``[REDACTED]``).

        A stand-in this object made stands for itself (redaction passing over a tape's value again leaves
        it); a marker stays a marker."""
        if MARKER.fullmatch(secret):
            return secret
        marker = f"[REDACTED:{kind}]" if kind else "[REDACTED]"
        digest = hmac.digest(self._key, secret.encode("utf-8"), "sha256")
        with self._lock:
            if secret in self._made:
                return secret
            out = self._stand_in_of.get(digest, "")
            if out:
                return out
            for attempt in range(_ATTEMPTS):
                out = stand_in_shape(secret, self._key, attempt)
                if out == "[REDACTED]":
                    return out
                if self._drawn_for.setdefault(out, digest) == digest:
                    break
            else:
                return marker  # a shape too small to tell this secret from the others: the marker stays
            self._stand_in_of[digest] = out
            self._made.setdefault(out, marker)
        return out

    def text(self, original: str, redacted: str, made: dict[str, str] | None = None) -> str:
        """``redacted`` (``original`` with markers in place of its secrets) with each marker replaced by the
        stand-in of the secret it replaced; markers that cannot be matched back stay. ``made`` collects
        the stand-ins written and their markers."""
        if "[REDACTED" not in redacted:
            return redacted
        pieces = MARKER.split(redacted)
        markers = MARKER.findall(redacted)
        if not markers:
            return redacted
        found = _align(original, pieces)
        if found is None:
            return redacted
        out = [pieces[0]]
        for marker, secret, piece in zip(markers, found, pieces[1:], strict=True):
            kind = marker[10:-1] if marker.startswith("[REDACTED:") else ""
            stand_in = self.replacement(kind, secret)
            if made is not None and stand_in != secret and not MARKER.fullmatch(stand_in):
                made.setdefault(stand_in, marker)
            elif made is not None and stand_in == secret:
                with self._lock:
                    if secret in self._made:
                        made.setdefault(secret, self._made[secret])
            out.append(stand_in)
            out.append(piece)
        return "".join(out)

    def value(self, original: JSONValue, redacted: JSONValue, made: dict[str, str] | None = None) -> JSONValue:
        """JSON data: ``redacted`` (``original`` redacted) with its markers turned into stand-ins where the
        secret is found in ``original`` at the same place."""
        if type(redacted) is str:
            if type(original) is str:
                if original == redacted:
                    return redacted
                out = self.text(original, redacted, made)
                if MARKER.search(out) and redacted[:1] in "{[" and original[:1] in "{[":
                    return self._json_string(original, redacted, made) or out
                return out
            return redacted
        if type(redacted) is dict and type(original) is dict and len(redacted) == len(original):
            return {
                kr if ko == kr or type(ko) is not str or type(kr) is not str else self.text(ko, kr, made): (
                    vr
                    if type(vr) is not str and type(vr) is not dict and type(vr) is not list
                    else self.value(vo, vr, made)
                )
                for (ko, vo), (kr, vr) in zip(original.items(), redacted.items(), strict=True)
            }
        if type(redacted) is list and type(original) in (list, tuple) and len(redacted) == len(original):
            return [self.value(o, r, made) for o, r in zip(original, redacted, strict=True)]
        return redacted

    def _json_string(self, original: str, redacted: str, made: dict[str, str] | None) -> str | None:
        """JSON inside a string, re-serialised by redaction: matched back as data."""
        try:
            before, after = orjson.loads(original), orjson.loads(redacted)
        except orjson.JSONDecodeError:
            return None
        return orjson.dumps(self.value(before, after, made)).decode("utf-8")


def _align(original: str, pieces: list[str]) -> list[str] | None:
    """The secrets between ``pieces`` (the text around the markers) in ``original``; None if not found."""
    first, last = pieces[0], pieces[-1]
    if not original.startswith(first) or not original.endswith(last):
        return None
    pos, limit = len(first), len(original) - len(last)
    found: list[str] = []
    for piece in pieces[1:-1]:
        if not piece:
            return None  # two markers side by side: where one secret ends is not known
        at = original.find(piece, pos + 1, limit)
        if at < 0:
            return None
        found.append(original[pos:at])
        pos = at + len(piece)
    if limit <= pos:
        return None
    found.append(original[pos:limit])
    return found


_CUT: Final = "…[truncated "
_TOKEN_CHAR: Final = re.compile(r"[A-Za-z0-9+/_\-.~%]")


class StandInTable:
    """The stand-ins a tape holds (``agent_replay.stand_ins`` of its steps) and the markers they stand for.

    ``restore`` gives back the redacted form of data holding them: what the call key is computed on at
    replay (a recorded stand-in echoed into a later call), and what ``check`` decides on."""

    def __init__(self, entries: Mapping[str, str] = {}) -> None:
        self._entries = {k: v for k, v in entries.items() if k and MARKER.fullmatch(v)}
        ordered = sorted(self._entries, key=len, reverse=True)
        self._text = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        escaped = {orjson.dumps(k).decode("utf-8")[1:-1]: v for k, v in self._entries.items()}
        self._escaped = escaped
        by_length = sorted(escaped, key=len, reverse=True)
        self._json = re.compile("|".join(map(re.escape, by_length))) if by_length else None

    @classmethod
    def from_attributes(cls, attributes: Iterable[object]) -> StandInTable:
        """From the ``agent_replay.stand_ins`` values of a tape's spans (JSON objects; others are ignored)."""
        entries: dict[str, str] = {}
        for value in attributes:
            if not isinstance(value, str):
                continue
            try:
                data = orjson.loads(value)
            except orjson.JSONDecodeError:
                continue
            if isinstance(data, dict):
                for k, v in data.items():
                    if isinstance(k, str) and isinstance(v, str):
                        entries.setdefault(k, v)
        return cls(entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __contains__(self, text: object) -> bool:
        return text in self._entries

    def restore_text(self, text: str) -> str:
        """``text`` (plain or JSON text) with each stand-in of the table replaced by its marker, also one cut
        short by a size cap (``…[truncated``)."""
        if self._text is None or self._json is None:
            return text
        text = self._json.sub(lambda m: self._escaped[m.group()], text)
        text = self._text.sub(lambda m: self._entries[m.group()], text)
        if _CUT in text:
            text = _CUT.join(self._cut(head) for head in text.split(_CUT))
        return text

    def _cut(self, head: str) -> str:
        """``head`` with a stand-in's beginning at its very end (the rest cut by a cap) made its marker."""
        best = 0
        marker = ""
        for stand_in, stands_for in self._entries.items():
            for size in range(min(len(stand_in), len(head)), best, -1):
                at = len(head) - size
                if head.endswith(stand_in[:size]) and (at == 0 or not _TOKEN_CHAR.match(head[at - 1])):
                    best, marker = size, stands_for
                    break
        return head[: len(head) - best] + marker if best else head

    def restore_json(self, json_text: str) -> str:
        """Compact JSON text with each stand-in (as JSON escapes it) replaced by its marker."""
        if self._json is None:
            return json_text
        return self._json.sub(lambda m: self._escaped[m.group()], json_text)

    def restore(self, value: JSONValue) -> JSONValue:
        """JSON data (or text) with each stand-in of the table replaced by its marker."""
        if self._text is None:
            return value
        if isinstance(value, str):
            return self.restore_text(value)
        return orjson.loads(self.restore_text(orjson.dumps(value).decode("utf-8")))
