"""High-entropy tokens: a long unbroken run of mixed characters is a key, even with no name and no prefix.

A *run* is a maximal stretch of token characters (letters, digits and ``+/=_-.~``). It is a secret
when, with its leading and trailing punctuation stripped, it

- is at least 20 characters long,
- holds at least two digits and at least two letters,
- changes character class often (lower, upper, digit, other: at least 0.3 changes per character; words,
  paths and ``snake_case``/``camelCase`` names change far less), and
- has a Shannon entropy of at least 3.5 bits per character (3.2 for a run of 40 or more, whose
  alphabet may be smaller, such as lower-case letters and digits),

and it is not one of the identifiers an agent needs back, which are kept:

- UUIDs, and runs of hexadecimal digits of any length, hyphens allowed (sha256 and git digests, md5
  ETags, object ids), also after a ``sha256-``-style algorithm prefix;
- runs of digits and dots (numbers, versions, snowflake ids), and ULIDs (26 Crockford base32 characters);
- identifiers with a short body: a word prefix then fewer than 20 characters (``cus_NffrFeUfNV2Hib``,
  ``ord_10000``);
- names with a random suffix: lower-case words joined by ``-``, ``_`` or ``.``, then at most two segments
  of fewer than 16 characters (``agent-window-0a70e798``, a Kubernetes pod ``checkout-7d9f8c6b5-x2x9q``,
  a deployment's ``api.v2-canary-3f9c1``);
- the ids model APIs mint and agents echo back (tool calls, messages, responses, requests: ``toolu_…``,
  ``call_…``, ``msg_…``, ``chatcmpl-…``, ``resp_…``, ``fc_…``, ``req_…``), which a replay's
  conversation and ``show`` need to pair a tool call with its result;
- base64 data whose bytes begin with a known file signature (PNG, JPEG, GIF, WebP, PDF, ZIP, gzip):
  thumbnails and attachments;
- runs longer than 512 characters (data, not a key; a long secret is found by its format or its name).

Values under a key that names an identifier or encoded data (``id``, ``order_id``, ``uuid``,
``sha256``, ``etag``, ``thumbnail``, ``embedding``, ``b64_json`` ...), or an OpenTelemetry resource's
identity (``service.name``, ``service.version``, ``host.name``, ``k8s.pod.name``, ``container.id`` ...),
are kept by the walk (``_redact``) and by span and resource attributes (``Redactor.redact_attribute``)
before they reach these rules.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from typing import Final

from ._data import is_data, public_pem_spans

__all__ = ["MIN_RUN", "RUN", "high_entropy_spans", "is_identifier_key"]

MIN_RUN: Final = 20
_MAX_RUN: Final = 512
RUN: Final = re.compile(r"[A-Za-z0-9+/=_\-.~]{20,}")
"""A candidate run (before its edges are stripped)."""

_EDGE = "+/=_-.~"
_HEX = re.compile(r"[0-9a-fA-F][0-9a-fA-F\-]*")
_DIGEST = re.compile(r"(?:(?:sha|md|blake|crc|xxh|git|commit|rev)[a-z0-9]*[-_=])?[0-9a-fA-F][0-9a-fA-F\-]*")
_PREFIXED_HEX = re.compile(r"[A-Za-z][A-Za-z0-9_\-.]{0,15}?[-_.][0-9a-fA-F]{32,}(?:[-_][A-Za-z0-9]{1,16})?")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-]+=*")
_BASE64_BODY = re.compile(r"(?=[^+/]*[+/])[A-Za-z0-9+/]+=*")
_SEPARATORS = re.compile(r"[/._\-~:+=]")
_URL_SAFE = re.compile(r"[A-Za-z0-9_\-]+")
_MIN_SEGMENT: Final = 16
_NUMBERISH = re.compile(r"[0-9.]+")
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_SHORT_BODY = re.compile(r"[a-z]{2,12}[_-][A-Za-z0-9]{1,19}")
_SLUG = re.compile(r"(?:[a-z]{2,}[-_.])+[A-Za-z0-9]{1,15}(?:[-_.][A-Za-z0-9]{1,15})?")
_RESOURCE_IDENTITY = re.compile(
    r"(?:service|host|k8s|container|deployment|cloud|faas|os|telemetry|webengine)\.(?:[a-z_]+\.)*"
    r"(?:name|id|uid|version|namespace|instance|environment|region|availability_zone)"
)
"""OpenTelemetry resource attributes that identify the service and where it runs (semantic conventions):
names and ids, never credentials (``process.command_args`` and the like are not among them)."""
_MODEL_IDS = re.compile(
    r"(?:(?:toolu|srvtoolu|tooluse|call|msg|chatcmpl|resp|rs|req|run|asst|thread|file|batch|ws)[_-]|fc_)[A-Za-z0-9_-]{6,64}"
)
_SIGNATURES: Final = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"%PDF", b"PK\x03\x04", b"\x1f\x8b")

# Keys whose values are identifiers the agent needs back: their value is never an entropy match.
_ID_WORDS: Final = frozenset(
    {"id", "ids", "uuid", "guid", "sha", "sha1", "sha256", "sha512", "md5", "digest", "hash", "etag", "checksum"}
)
_ID_WORDS_ANYWHERE: Final = frozenset({"thumbnail", "thumb", "image", "img", "avatar", "icon", "png", "jpeg", "jpg"})
# Encoded data rather than ids (an embedding's base64 floats, ``b64_json`` images, audio): kept the same way.
_DATA_PARTS: Final = ("b64", "base64", "embedding", "vector", "audio", "thumbnail", "image")
_KEY_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


_PAGE_WORDS: Final = frozenset({"page", "next", "continuation", "pagination", "sync", "resume", "prev", "previous"})
_ID_KEY_CACHE: dict[str, bool] = {}
_ID_KEY_CACHE_SIZE: Final = 4096


def is_identifier_key(key: str) -> bool:
    """Whether a key names an identifier (``id``, ``orderId``, ``file_sha256``, ``thumbnail_b64`` ...)."""
    found = _ID_KEY_CACHE.get(key)
    if found is None:
        if len(_ID_KEY_CACHE) >= _ID_KEY_CACHE_SIZE:
            _ID_KEY_CACHE.clear()  # bounded: keys may be data
        found = _ID_KEY_CACHE[key] = _decide_identifier_key(key)
    return found


def _decide_identifier_key(key: str) -> bool:
    if _RESOURCE_IDENTITY.fullmatch(key):
        return True
    words = [w.lower() for w in _KEY_SEGMENT.findall(key)]
    if not words:
        return False
    if words[-1] in _ID_WORDS or not _ID_WORDS_ANYWHERE.isdisjoint(words):
        return True
    if "cursor" in words or (words[-1] == "token" and not _PAGE_WORDS.isdisjoint(words)):
        return True  # a page token or a cursor: the agent sends it back for the next page
    lowered = key.lower()
    return any(part in lowered for part in _DATA_PARTS)


def _class(char: str) -> int:
    if "a" <= char <= "z":
        return 0
    if "A" <= char <= "Z":
        return 1
    if "0" <= char <= "9":
        return 2
    return 3


def _entropy(token: str) -> float:
    n = len(token)
    return -sum(count / n * math.log2(count / n) for count in Counter(token).values())


def _media(token: str) -> bool:
    """Whether ``token`` is base64 of a file with a known signature (a thumbnail, an attachment)."""
    head = token[:24]
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4), altchars=b"-_" if "-" in head or "_" in head else None)
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(_SIGNATURES)


# Each character as its class (lower, upper, digit); the other token characters ("+/=" of base64, "-_" of a
# url-safe token, ".~") are dropped: neither a word break nor a change. Anything else stays as itself.
_CLASSES: Final = str.maketrans(
    {
        **{c: "a" for c in "abcdefghijklmnopqrstuvwxyz"},
        **{c: "A" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
        **{c: "0" for c in "0123456789"},
        **{c: None for c in "+/=_-.~"},
    }
)


def _segment_key_like(token: str) -> bool:
    n = len(token)
    if _HEX.fullmatch(token) or _NUMBERISH.fullmatch(token):
        return False
    classes = token.translate(_CLASSES)
    digits = classes.count("0")
    letters = classes.count("a") + classes.count("A")
    if digits + letters != len(classes):
        return _segment_key_like_by_char(token)  # a character outside the token alphabet
    # a change is a character of another class than the last one counted (the first counts)
    changes = sum(map(str.__ne__, classes, classes[1:])) + 1 if classes else 0
    if digits < 2 or letters < 2 or changes < 0.3 * n:
        return False
    return _entropy(token) >= (3.2 if n >= 40 else 3.5)


def _segment_key_like_by_char(token: str) -> bool:
    """``_segment_key_like`` one character at a time (for a token with characters outside the token alphabet)."""
    n = len(token)
    digits = letters = changes = 0
    last = -1
    for char in token:
        kind = _class(char)
        if kind == 3:
            continue  # "+/=" inside base64, "-_" inside a url-safe token: neither a word break nor a change
        if kind == 2:
            digits += 1
        else:
            letters += 1
        if kind != last:
            changes += 1
            last = kind
    if digits < 2 or letters < 2 or changes < 0.3 * n:
        return False
    return _entropy(token) >= (3.2 if n >= 40 else 3.5)


def _printable_base64(token: str) -> bool:
    """Whether ``token`` is base64 of printable text (the decoded-forms layer reads that text instead)."""
    if len(token) % 4 == 1 or not _BASE64.fullmatch(token):
        return False
    try:
        raw = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None
        )
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return text.isprintable() or all(c.isprintable() or c in "\n\r\t" for c in text)


def is_key_like(token: str) -> bool:
    """Whether a stripped run is a high-entropy key by the rules of this module's docstring."""
    n = len(token)
    if n < MIN_RUN or n > _MAX_RUN:
        return False
    if _DIGEST.fullmatch(token) or _NUMBERISH.fullmatch(token) or _ULID.fullmatch(token):
        return False
    if _SHORT_BODY.fullmatch(token) or _SLUG.fullmatch(token) or _MODEL_IDS.fullmatch(token):
        return False
    if _media(token) or _printable_base64(token) or is_data(token):
        return False
    if _BASE64_BODY.fullmatch(token):  # base64 (with + or /): one piece, however its slashes fall
        return _segment_key_like(token.rstrip("="))
    if _PREFIXED_HEX.fullmatch(token) and not _UUID.search(token):
        return True  # a vendor's word then a long hex key (shpat_..., key-..., dop_v1_...), not a prefixed UUID
    segments = _SEPARATORS.split(token)
    if any(len(segment) >= _MIN_SEGMENT and _segment_key_like(segment) for segment in segments):
        return True
    # a url-safe token whose "-" and "_" fall often enough to cut it short (few separators, unlike a path:
    # a run with "/", ".", "~", ":" or "=" between its pieces is a path, a host or a name, judged by piece)
    return (
        _URL_SAFE.fullmatch(token) is not None and len(segments) - 1 <= n // 7 and _segment_key_like("".join(segments))
    )


def high_entropy_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each high-entropy token in ``text``."""
    spans: list[tuple[int, int]] = []
    public = public_pem_spans(text)  # a certificate's or a public key's base64 lines are data
    for match in RUN.finditer(text):
        if public and any(a <= match.start() < b for a, b in public):
            continue
        for start, end in _pieces(text, *match.span()):
            if end - start >= MIN_RUN:
                _judge(text, start, end, match.group(), spans)
    return spans


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A run cut at each ``=`` that is not base64 padding: ``request_id=<uuid>`` is a name and its value."""
    inner = text.find("=", start, end)
    if inner < 0 or text[inner:end].strip("=") == "":
        return [(start, end)]
    out = []
    while inner >= 0:
        after = inner
        while after < end and text[after] == "=":
            after += 1
        if after == end:  # padding: it stays with its piece
            break
        out.append((start, inner))
        start = after
        inner = text.find("=", start, end)
    out.append((start, end))
    return out


def _judge(text: str, start: int, end: int, whole: str, spans: list[tuple[int, int]]) -> None:
    """Add ``text[start:end]`` (a piece of the run ``whole``), its edges stripped, to ``spans`` if it is a key."""
    while start < end and text[start] in _EDGE:
        start += 1
    while end > start and text[end - 1] in _EDGE and not (text[end - 1] == "=" and end - start > 20):
        end -= 1
    if is_key_like(text[start:end]) and not _media(whole):
        spans.append((start, end))
