"""Stand-ins: what a redacted secret becomes on a tape, a string of the secret's shape that is plainly not it.

Redaction decides *what* is a secret and marks it ``[REDACTED:<kind>]`` (the redacted form: call keys are
computed on it, so a live call carrying the real secret, a test's dummy or a stand-in matches the recorded
one). What the tape then carries in place of the marker is a stand-in, made here by one seam,
``StandIns.replacement(kind, secret)``:

- a known vendor prefix (``sk-proj-``, ``ghp_``, ``xoxb-``, ``AKIA``, ``sb_secret_`` …) is kept as it is;
- a delimiter (``.``, ``:``, ``=``, ``@``, white space …) stays where it is, and so does ``-`` in a segmented
  format (Slack's ``xoxb-1-2-x``); otherwise ``-``, ``_``, ``+``, ``/`` belong to the run;
- each run of letters and digits (and those symbols) is drawn again from the classes the run used (hex
  stays hex, digits stay digits, each of upper case, lower case, digits and each symbol the run had is in
  its stand-in), so the length and the classes are the same;
- a run of 12 characters or more starts with a visible mark: a run of one character
  (``X`` where upper case is allowed, ``x`` for lower case, ``0`` for digits and hex) filling all but a few
  of its characters. That reads as a stand-in, and it leaves the string far below the Shannon entropy that
  secret scanners (gitleaks' rules, push protection) ask of a live credential;
- a GitHub token's last six characters (its CRC32 checksum) never check, nor does any Luhn-shaped number.

The drawn characters come from HMAC-SHA256 under a key of 32 random bytes made when the ``StandIns`` is made
(one per recording, so per tape) and never written anywhere. The same secret gets the same stand-in
throughout a tape (a result, a later argument, a message), while what is written is a pseudo-random
function of the secret under a key nobody else has: it tells nothing about the secret beyond its length,
its classes and its known prefix, and no guess (a dictionary of short passwords) can be checked against
it. No hash of the secret, salted or not, is ever written.

Where a shape cannot be kept, the marker stays: the value under a secret key that is not a string (a
number, an object) is ``[REDACTED]``; text redaction rewrote around the secret (JSON inside a string that
was re-serialised and cannot be matched back) keeps its markers; two secrets with nothing between them
keep theirs. ``StandIns.table`` says which stand-ins the tape holds and the marker each stands for
(``agent_replay.stand_ins`` on a step): ``check`` and the replayer read it (``StandInTable``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import threading
import zlib
from collections.abc import Iterable, Mapping
from typing import Final

import orjson

from ._canonical import JSONValue

__all__ = ["MARKER", "StandInTable", "StandIns", "stand_in_shape"]

MARKER: Final = re.compile(r"\[REDACTED(?::[A-Za-z0-9_]+)?\]")
"""A redaction marker, as the redactor writes it."""

# Kept as they are: the prefixes a validating agent (and a reader) needs to see. Longest first.
_PREFIXES: Final = tuple(
    sorted(
        (
            "sk-proj-",
            "sk-svcacct-",
            "sk-admin-",
            "sk-ant-api03-",
            "sk-ant-admin01-",
            "sk-ant-",
            "sk-or-v1-",
            "sk-",
            "sk_live_",
            "sk_test_",
            "rk_live_",
            "rk_test_",
            "pk_live_",
            "pk_test_",
            "whsec_",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "glpat-",
            "gldt-",
            "glrt-",
            "xoxb-",
            "xoxp-",
            "xoxa-",
            "xoxr-",
            "xoxe-",
            "xapp-",
            "AKIA",
            "ASIA",
            "ABIA",
            "ACCA",
            "AIza",
            "ya29.",
            "GOCSPX-",
            "sb_secret_",
            "sbp_",
            "hf_",
            "npm_",
            "pypi-",
            "SG.",
            "fc-",
            "dop_v1_",
            "doo_v1_",
            "shpat_",
            "shpss_",
            "glsa_",
            "lin_api_",
            "sq0atp-",
            "sq0csp-",
            "eyJ",
            "Bearer ",
            "Basic ",
        ),
        key=len,
        reverse=True,
    )
)
_UPPER: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER: Final = "abcdefghijklmnopqrstuvwxyz"
_DIGIT: Final = "0123456789"
_HEX_LOWER: Final = "0123456789abcdef"
_HEX_UPPER: Final = "0123456789ABCDEF"
_SYMBOLS: Final = "+/_-"
"""Inside a run (base64, passwords, a key's body): redrawn, so where they stood in the secret is not told.
After a prefix whose format is segmented (Slack's ``xoxb-1-2-x``) they are separators and stay."""
_SEGMENTED: Final = ("xox", "xapp-")
_RUN: Final = re.compile(r"[A-Za-z0-9]+")
_WIDE_RUN: Final = re.compile(r"[A-Za-z0-9+/_-]+")
_MARK_FROM: Final = 12
"""A run this long or longer carries the visible mark."""
_DRAWN: Final = 8
"""Characters of a marked run still drawn (so that two secrets' stand-ins differ)."""
_BASE62: Final = _DIGIT + _UPPER + _LOWER
_SPACE: Final = re.compile(r"(\s+)")
_SCHEMES: Final = frozenset({"Bearer", "bearer", "Basic", "basic", "token", "Token", "Digest", "SSWS", "ApiKey"})
"""Auth schemes, kept: the word before a credential in a header says how it is sent, not what it is."""


def _alphabet(run: str) -> tuple[str, tuple[str, ...], str]:
    """The characters a run's stand-in is drawn from, the classes it must hold, and its mark character."""
    if len(run) >= 8 and all(c in _HEX_LOWER for c in run) and any(c in "abcdef" for c in run):
        return _HEX_LOWER, (), "0"
    if len(run) >= 8 and all(c in _HEX_UPPER for c in run) and any(c in "ABCDEF" for c in run):
        return _HEX_UPPER, (), "0"
    symbols = "".join(sorted({c for c in run if c in _SYMBOLS}))
    classes = tuple(cls for cls in (_UPPER, _LOWER, _DIGIT) if any(c in cls for c in run))
    mark = "X" if _UPPER in classes else "x" if _LOWER in classes else "0"
    return "".join(classes) + symbols, classes + tuple(symbols), mark


class _Stream:
    """Pseudo-random indexes from HMAC-SHA256(key, secret ‖ counter)."""

    def __init__(self, key: bytes, secret: str) -> None:
        self._key, self._secret, self._counter, self._pool = key, secret.encode("utf-8"), 0, b""

    def index(self, size: int) -> int:
        while True:
            if not self._pool:
                block = self._secret + self._counter.to_bytes(8, "big")
                self._pool = hmac.new(self._key, block, hashlib.sha256).digest()
                self._counter += 1
            byte, self._pool = self._pool[0], self._pool[1:]
            if byte < 256 - 256 % size:  # no modulo bias
                return byte % size


def _run_stand_in(run: str, stream: _Stream, marked: bool) -> str:
    alphabet, classes, mark = _alphabet(run)
    size = len(run)
    drawn = min(_DRAWN, size) if marked else size
    out = [mark] * (size - drawn) + [alphabet[stream.index(len(alphabet))] for _ in range(drawn)]
    # every class the run had appears in the drawn part (a validator may ask for a digit), each put on a
    # character whose class the drawn part holds more than once
    first = size - drawn
    for cls in classes:
        if drawn < len(classes) or any(c in cls for c in out[first:]):
            continue
        for at in range(first, size):
            owner = next(k for k in classes if out[at] in k)
            if sum(c in owner for c in out[first:]) > 1:
                out[at] = cls[stream.index(len(cls))]
                break
    return "".join(out)


def stand_in_shape(secret: str, key: bytes) -> str:
    """The stand-in of ``secret`` under ``key`` (see the module docstring); deterministic in both.

    Each word (between white space) is stood in for on its own, so a token inside a longer finding
    (``token ghp_…`` of a header line) gets the stand-in it has alone; an auth scheme's word is kept."""
    words = _SPACE.split(secret)
    out = "".join(
        word if n % 2 or word in _SCHEMES or not word else _word_stand_in(word, key) for n, word in enumerate(words)
    )
    return "[REDACTED]" if out == secret else out


def _word_stand_in(secret: str, key: bytes) -> str:
    prefix = next((p for p in _PREFIXES if secret.startswith(p) and len(secret) > len(p)), "")
    body = secret[len(prefix) :]
    stream = _Stream(key, secret)
    runs = list((_RUN if prefix.startswith(_SEGMENTED) else _WIDE_RUN).finditer(body))
    parts: list[str] = [prefix]
    copied = 0
    for match in runs:
        parts.append(body[copied : match.start()])
        parts.append(_run_stand_in(match.group(), stream, len(match.group()) >= _MARK_FROM))
        copied = match.end()
    parts.append(body[copied:])
    out = "".join(parts)
    if prefix.startswith("gh") and len(body) >= 7:
        out = _break_github_checksum(out)
    return out


def _break_github_checksum(token: str) -> str:
    """A GitHub token ends in the base62 CRC32 of the rest: make sure the stand-in's never checks."""
    head, tail = token[:-6], token[-6:]
    crc = zlib.crc32(head.encode("utf-8"))
    digits = ""
    for _ in range(6):
        crc, rest = divmod(crc, 62)
        digits = _BASE62[rest] + digits
    if tail != digits:
        return token
    last = tail[-1]
    return head + tail[:-1] + ("1" if last != "1" else "2")


class StandIns:
    """One tape's stand-ins: a random key that never leaves the process, and what was made with it."""

    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._lock = threading.Lock()
        self._made: dict[str, str] = {}  # stand-in -> the marker it first stood for

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
        with self._lock:
            if secret in self._made:
                return secret
        out = stand_in_shape(secret, self._key)
        if out != "[REDACTED]":
            with self._lock:
                self._made.setdefault(out, marker)
        return out

    def text(self, original: str, redacted: str, made: dict[str, str] | None = None) -> str:
        """``redacted`` (``original`` with markers in place of its secrets) with each marker replaced by the
        stand-in of the secret it replaced; markers that cannot be matched back stay. ``made`` collects
        the stand-ins written and their markers."""
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
                self.text(ko, kr, made) if type(ko) is str and type(kr) is str else kr: self.value(vo, vr, made)
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
