"""The three layers of the contract on one string, behind one cheap gate.

After the project's own named shapes (``_scan``), a string goes through:

1. the maintained detector (``_detector``: Kingfisher's rules), asked only about text that holds a run
   of 16 or more token characters (every format it knows is at least that long);
2. credential context (``_context``): values that a name calls a credential;
3. high-entropy tokens (``_entropy``), with the identifier rules stated there;

and the decoded forms of the text (``_decoded``: URL-encoded, HTML-escaped, base64 text) go through
all three again. Each finding becomes a fixed placeholder: ``[REDACTED:known_token]``,
``[REDACTED:credential]``, ``[REDACTED:high_entropy]`` and ``[REDACTED:encoded_secret]``.

The gate (``may_hold``) is one regex search: a credential word, a 16-character token run, a percent
or HTML escape, ``-u``, or a ``.pgpass``-like ``:port:``. Text it rules out costs nothing more; on
long text it runs in RE2 (linear, no backtracking), on short text in ``re`` (cheaper to call).
"""

from __future__ import annotations

import re
from typing import Any, Final

import re2  # type: ignore[import-untyped]

from ._context import TRIGGERS, context_spans
from ._data import public_pem_spans
from ._decoded import decoded_spans
from ._detector import DETECTOR
from ._entropy import RUN, high_entropy_spans

__all__ = [
    "CONTEXT",
    "ENCODED",
    "ENTROPY",
    "KNOWN",
    "LAYER_NAMES",
    "layer_spans",
    "may_hold",
    "may_hold_json",
    "redact_layers",
]

KNOWN: Final = "known_token"
CONTEXT: Final = "credential"
ENTROPY: Final = "high_entropy"
ENCODED: Final = "encoded_secret"
LAYER_NAMES: Final = (KNOWN, CONTEXT, ENTROPY, ENCODED)
"""The kinds the layers name in ``"[REDACTED:<kind>]"``."""
_RANK: Final = {KNOWN: 0, CONTEXT: 1, ENCODED: 2, ENTROPY: 3}

_TOKEN_RUN = r"[A-Za-z0-9+/=_\-.~]{16}"
_GATE = (
    "(?i:" + "|".join(TRIGGERS) + r")|" + _TOKEN_RUN + r"|%[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{2,8};|-u[ =]"
    r"|:(?:[0-9]{1,5}|\*):[^:\s\"',]+:[^:\s\"',]+:"
)
# In compact JSON text the keys are decided by name (``Redactor.may_redact``): a credential word counts
# only where a string value uses it as a name (``password: x``, ``token=x``, ``\"key\": \"x\"``, ``<secret>``).
_TRIGGER_NAME = "(?i:" + "|".join(TRIGGERS) + r")[A-Za-z0-9_.\-]*"
_JSON_GATE = (
    _TRIGGER_NAME
    + r"""(?:[ \t]*=|(?:\\"|')?[ \t]*:|>|[ \t]+[^\s"\\])|"""
    + _TOKEN_RUN
    + r"|%[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{2,8};|-u[ =]|(?i:machine)[ \t]"
    r"|:(?:[0-9]{1,5}|\*):[^:\s\"',]+:[^:\s\"',]+:"
)
_SHORT_ESCAPES = re.compile(r"%[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{2,8};|-u[ =]")
_SHORT_PGPASS = re.compile(r":(?:[0-9]{1,5}|\*):[^:\s\"',]+:[^:\s\"',]+:")
_RUN: Final = 16
_TRIGGER_SEARCH = re.compile("|".join(TRIGGERS)).search  # on lower-cased text: faster than a find per word
_JSON_SHORT_GATE = re.compile(_JSON_GATE)
_JSON_LONG_GATE: Any = re2.compile(_JSON_GATE)
_LONG_GATE: Any = re2.compile(_GATE)
_SHORT_RUN = re.compile(_TOKEN_RUN)
_LONG_RUN: Any = re2.compile(_TOKEN_RUN)
_LONG_RUN_ALL: Any = re2.compile(RUN.pattern)
_SHORT: Final = 256
_MIN_TEXT: Final = 5
_MAX_DEPTH: Final = 2


def _run_or_rest(text: str, json: bool = False) -> bool:
    """The gate's parts other than the credential words, on short text: substring tests, then a small regex.

    A 16-character run lies inside one word between white space (and, in JSON text, inside one
    stretch between quotes), so text with no such stretch needs no regex for it."""
    if len(text) >= _RUN:
        pieces = text.split('"') if json else text.split()
        if any(len(piece) >= _RUN for piece in pieces) and _SHORT_RUN.search(text) is not None:
            return True
    if ("%" in text or "&" in text or "-u" in text) and _SHORT_ESCAPES.search(text) is not None:
        return True
    return ":" in text and _SHORT_PGPASS.search(text) is not None


def may_hold(text: str) -> bool:
    """Cheap: False only if none of the layers can find anything in ``text``.

    Long text: one RE2 search of the gate. Short text (most strings of a walked value): the same
    question by plain substring tests first (a trigger word; a 16-character run needs a 16-character
    word between white space; an escape needs ``%`` or ``&``), each confirmed by a small regex."""
    size = len(text)
    if size < _MIN_TEXT:
        return False
    if size > _SHORT:
        return _LONG_GATE.search(text) is not None
    return _TRIGGER_SEARCH(text.lower()) is not None or _run_or_rest(text)


def may_hold_json(json_text: str) -> bool:
    """``may_hold`` for the compact JSON text of some data whose keys are decided elsewhere."""
    size = len(json_text)
    if size < _MIN_TEXT:
        return False
    if size > _SHORT:
        return _JSON_LONG_GATE.search(json_text) is not None
    lowered = json_text.lower()
    if _TRIGGER_SEARCH(lowered) is not None or "machine" in lowered:
        return _JSON_SHORT_GATE.search(json_text) is not None
    return _run_or_rest(json_text, json=True)


def _has_run(text: str) -> bool:
    return (_SHORT_RUN if len(text) <= _SHORT else _LONG_RUN).search(text) is not None


def _occurrences(text: str, secret: str) -> list[tuple[int, int]]:
    out = []
    at = text.find(secret)
    while at >= 0:
        out.append((at, at + len(secret)))
        at = text.find(secret, at + len(secret))
    return out


def layer_spans(text: str, depth: int = 0, entropy: bool = True) -> list[tuple[int, int, str]]:
    """Every (start, end, kind) the layers find in ``text`` (unsorted, may overlap)."""
    spans: list[tuple[int, int, str]] = []
    run = _has_run(text)
    if run:
        for secret in DETECTOR.known_tokens(text):
            spans.extend((start, end, KNOWN) for start, end in _occurrences(text, secret))
    lowered = text.lower()
    spans.extend((start, end, CONTEXT) for start, end in context_spans(text, lowered))
    if run and entropy:
        if len(text) > _SHORT:  # RE2 finds the candidate runs; each is then judged in Python
            public = public_pem_spans(text)
            for match in _LONG_RUN_ALL.finditer(text):
                start, end = match.span()
                if public and any(a <= start < b for a, b in public):
                    continue
                spans.extend((start + a, start + b, ENTROPY) for a, b in high_entropy_spans(text[start:end]))
        else:
            spans.extend((start, end, ENTROPY) for start, end in high_entropy_spans(text))
    if depth < _MAX_DEPTH:
        spans.extend((start, end, ENCODED) for start, end in decoded_spans(text, _find, depth))
    return spans


def _find(text: str, depth: int) -> list[tuple[int, int]]:
    if not may_hold(text):
        return []
    return [(start, end) for start, end, _ in layer_spans(text, depth)]


def redact_layers(text: str, entropy: bool = True, gated: bool = False) -> str:
    """``text`` with every finding of the layers replaced by its placeholder (``text`` itself if clean).

    ``gated``: the caller has asked ``may_hold`` already (about the text before other rules changed it)."""
    if not gated and not may_hold(text):
        return text
    spans = layer_spans(text, 0, entropy)
    if not spans:
        return text
    # at one start the longest span wins, and of equal ones the most specific kind names the placeholder
    spans.sort(key=lambda span: (span[0], -span[1], _RANK[span[2]]))
    parts: list[str] = []
    copied = 0
    for start, end, kind in spans:
        if end <= copied:
            continue
        if start < copied:  # overlaps the previous span: extend it
            copied = end
            continue
        parts.append(text[copied:start])
        parts.append(f"[REDACTED:{kind}]")
        copied = end
    parts.append(text[copied:])
    return "".join(parts)
