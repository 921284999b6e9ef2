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
- a run of 8 characters or more starts with a visible mark: a run of one character
  (``X`` where upper case is allowed, ``x`` for lower case, ``0`` for digits and hex) filling all but four
  of its characters (or as many as the run has classes). That reads as a stand-in, and it leaves the
  string below the Shannon entropy that secret scanners (gitleaks' rules, push protection) ask of a live
  credential;
- the last six characters of a GitHub or npm token (a CRC32 checksum) never check; other vendors' checksums
  fail by the mark itself (a run of one character is not what any vendor mints).

The drawn characters come from HMAC-SHA256 under a key of 32 random bytes made when the ``StandIns`` is made
(one per recording, so per tape) and never written anywhere. The same secret gets the same stand-in
throughout a tape (a result, a later argument, a message), while what is written is a pseudo-random
function of the secret under a key nobody else has: it tells nothing about the secret beyond its length,
its classes and its known prefix, and no guess (a dictionary of short passwords) can be checked against
it. No hash of the secret, salted or not, is ever written.
"""

from __future__ import annotations

import hmac
import re
import zlib
from typing import Final

__all__ = ["stand_in_shape"]

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
_MARK_FROM: Final = 8
"""A run this long or longer carries the visible mark."""
_DRAWN: Final = 4
"""Characters of a marked run still drawn: few, so that the string's entropy stays below what secret scanners
ask of a credential (gitleaks: 2 bits a character on most prefixed formats, counting the prefix); two
secrets of one tape that draw the same stand-in are told apart by ``StandIns`` (another attempt)."""
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
    """Pseudo-random indexes from HMAC-SHA256(key, secret ‖ attempt ‖ counter)."""

    def __init__(self, key: bytes, secret: str, attempt: int) -> None:
        self._key, self._counter, self._pool = key, 0, b""
        self._secret = secret.encode("utf-8") + attempt.to_bytes(4, "big")

    def index(self, size: int) -> int:
        while True:
            if not self._pool:
                block = self._secret + self._counter.to_bytes(8, "big")
                self._pool = hmac.digest(self._key, block, "sha256")
                self._counter += 1
            byte, self._pool = self._pool[0], self._pool[1:]
            if byte < 256 - 256 % size:  # no modulo bias
                return byte % size


def _run_stand_in(run: str, stream: _Stream, marked: bool) -> str:
    alphabet, classes, mark = _alphabet(run)
    size = len(run)
    drawn = min(max(_DRAWN, len(classes)), size) if marked else size
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


def stand_in_shape(secret: str, key: bytes, attempt: int = 0) -> str:
    """The stand-in of ``secret`` under ``key`` (see the module docstring); deterministic in all three.

    Each word (between white space) is stood in for on its own, so a token inside a longer finding
    (``token ghp_…`` of a header line) gets the stand-in it has alone; an auth scheme's word is kept.
    ``attempt`` draws another stand-in of the same shape (``StandIns`` asks for one when two secrets of a
    tape drew the same)."""
    words = _SPACE.split(secret)
    out = "".join(
        word if n % 2 or word in _SCHEMES or not word else _word_stand_in(word, key, attempt)
        for n, word in enumerate(words)
    )
    return "[REDACTED]" if out == secret else out


def _word_stand_in(secret: str, key: bytes, attempt: int) -> str:
    prefix = next((p for p in _PREFIXES if secret.startswith(p) and len(secret) > len(p)), "")
    body = secret[len(prefix) :]
    stream = _Stream(key, secret, attempt)
    runs = list((_RUN if prefix.startswith(_SEGMENTED) else _WIDE_RUN).finditer(body))
    parts: list[str] = [prefix]
    copied = 0
    for match in runs:
        parts.append(body[copied : match.start()])
        parts.append(_run_stand_in(match.group(), stream, len(match.group()) >= _MARK_FROM))
        copied = match.end()
    parts.append(body[copied:])
    out = "".join(parts)
    if prefix.startswith(("gh", "npm_")) and len(body) >= 7:
        out = _break_checksum(out, prefix)
    return out


def _crc_base62(text: str) -> str:
    crc, digits = zlib.crc32(text.encode("utf-8")), ""
    for _ in range(6):
        crc, rest = divmod(crc, 62)
        digits = _BASE62[rest] + digits
    return digits


def _break_checksum(token: str, prefix: str) -> str:
    """GitHub's and npm's tokens end in the base62 CRC32 of what comes before (with or without the prefix,
    as different checkers read it): make sure the stand-in's checks under neither reading."""
    head, tail = token[:-6], token[-6:]
    valid = {_crc_base62(head), _crc_base62(head[len(prefix) :])}
    if tail not in valid:
        return token
    return head + tail[:-1] + next(c for c in "123" if tail[:-1] + c not in valid)
