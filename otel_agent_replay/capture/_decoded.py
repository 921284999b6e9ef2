"""Decoded forms: a secret hidden by an encoding is found in the decoded text and removed from the encoded one.

Three encodings, each decoded with a map from every decoded character back to the encoded text, so
a secret found in the decoded text removes exactly the encoded characters that spell it:

- URL encoding (``%2F``, ``%3D``; ``+`` stays as it is): a URL-encoded PEM key or ``access_token``;
- HTML escaping (``&quot;``, ``&#34;``, ``&#x22;``, ``&amp;`` ...): escaped JSON or markup;
- base64 (standard or url-safe, 16 characters or more) that decodes to printable text: a token in
  base64-encoded JSON (a state parameter, a cursor, a cookie). The whole encoded run is removed when
  its decoded text holds a secret.

``decoded_spans(text, find)`` asks ``find`` (the other layers) about each decoded text.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable
from typing import Final

__all__ = ["base64_text", "decoded_spans", "may_be_encoded"]

Finder = Callable[[str, int], list[tuple[int, int]]]

_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,8}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_MIN_DECODED: Final = 8


def may_be_encoded(text: str) -> bool:
    """Cheap: whether ``text`` may hold URL-encoded or HTML-escaped characters."""
    return ("%" in text and _PERCENT.search(text) is not None) or ("&" in text and _ENTITY.search(text) is not None)


def _percent_decode(text: str) -> tuple[str, list[int]]:
    """``text`` with %XX sequences decoded as UTF-8, and where each decoded character starts in ``text``."""
    out: list[str] = []
    where: list[int] = []
    pos = 0
    for match in _PERCENT.finditer(text):
        start = match.start()
        if start < pos:
            continue
        for i in range(pos, start):
            out.append(text[i])
            where.append(i)
        # a run of %XX: decode its bytes together (a multi-byte UTF-8 character spans several)
        end = start
        raw = bytearray()
        while end + 2 < len(text) and text[end] == "%" and _PERCENT.match(text, end):
            raw.append(int(text[end + 1 : end + 3], 16))
            end += 3
        decoded = raw.decode("utf-8", "replace")
        step = (end - start) / max(1, len(decoded))
        for n, char in enumerate(decoded):
            out.append(char)
            where.append(start + int(n * step))
        pos = end
    for i in range(pos, len(text)):
        out.append(text[i])
        where.append(i)
    return "".join(out), where


def _html_decode(text: str) -> tuple[str, list[int]]:
    out: list[str] = []
    where: list[int] = []
    pos = 0
    for match in _ENTITY.finditer(text):
        for i in range(pos, match.start()):
            out.append(text[i])
            where.append(i)
        for char in html.unescape(match.group()):
            out.append(char)
            where.append(match.start())
        pos = match.end()
    for i in range(pos, len(text)):
        out.append(text[i])
        where.append(i)
    return "".join(out), where


def _mapped(spans: list[tuple[int, int]], where: list[int], size: int) -> list[tuple[int, int]]:
    out = []
    for start, end in spans:
        if start >= len(where):
            continue
        encoded_end = where[end] if end < len(where) else size
        out.append((where[start], encoded_end))
    return out


def base64_text(run: str) -> str | None:
    """The printable text (8 characters or more) that a base64 run (standard or url-safe) encodes, else None."""
    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    altchars = b"-_" if ("-" in body or "_" in body) else None
    if altchars is not None and ("+" in body or "/" in body):
        return None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if len(decoded) < _MIN_DECODED or not all(c.isprintable() or c in "\n\r\t" for c in decoded):
        return None
    return decoded


def decoded_spans(text: str, find: Finder, depth: int) -> list[tuple[int, int]]:
    """Spans of ``text`` whose decoded form holds a secret that ``find`` sees."""
    spans: list[tuple[int, int]] = []
    if "%" in text and _PERCENT.search(text) is not None:
        decoded, where = _percent_decode(text)
        if decoded != text:
            spans.extend(_mapped(find(decoded, depth + 1), where, len(text)))
    if "&" in text and _ENTITY.search(text) is not None:
        decoded, where = _html_decode(text)
        if decoded != text:
            spans.extend(_mapped(find(decoded, depth + 1), where, len(text)))
    for match in _BASE64_RUN.finditer(text):
        decoded_text = base64_text(match.group())
        if decoded_text is not None and find(decoded_text, depth + 1):
            spans.append(match.span())
    return spans
