"""One pass over a captured document's serialised text: where can redaction change it, and what does it become?

Capture dumps a value once (compact JSON). This module reads that text once, as a whole:

1. the maintained detector (``_detector``: Kingfisher) scans the whole text in one native call;
2. the value patterns' prefilters and the credential words (``_context.TRIGGERS``) are found with
   ``str.find``/literal-first regexes over the same text;
3. the high-entropy candidates are the runs of 20 or more token characters, found by one
   ``bytes.translate`` of the text (token characters to one byte, every other to a space) and a
   ``bytes.find`` for 20 of that byte, so the scan runs at memory speed; each run is judged by
   ``_entropy``'s rules, the usual identifiers rejected by one regex before the finer rules;
4. escapes that can hide a token (``%2F`` between token characters, a numeric HTML entity) and base64
   of printable text mark their string for the decoded forms.

Each finding is a character position in the text; it names the JSON string that holds it (found by
counting the unescaped quotes before it, which is exact in orjson's output). Only those strings are
decoded and decided by the rule set (``_scan.scan_text``: named shapes, field rules, the three layers
and decoded forms), and a string that changes is written back in place, JSON-escaped by orjson: the
text stays valid JSON and every other byte is the serialiser's own. Text that needs the structure
(a secret key name, ``$bytes``, JSON or an event inside a string, a stream's chunks, user patterns,
processors or personal data) is left to the caller's walk: ``redact_json`` returns None for it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Collection
from typing import Any, Final

import orjson
import re2  # type: ignore[import-untyped]

from ._context import TRIGGERS
from ._decoded import base64_text
from ._detector import DETECTOR
from ._entropy import MIN_RUN, RUN, high_entropy_spans
from ._jsontext import RE2_UNANCHORED, entropy_under, escaped, has_string_list, json_inside, re2_match, string_at
from ._linewise import UNCHANGED, WholeWords, clean_at, scan_lines
from ._precheck import keys_hit
from ._redact_rules import CompiledRules
from ._scan import scan_text
from ._tokenruns import NATIVE, run_spans, runs
from ._value_patterns import FIELD_TRIGGERS

__all__ = ["dirty_positions", "redact_json"]

_TOKEN_CHARS: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.~"
_TO_RUNS: Final = bytes(ord("a") if chr(n).encode() in _TOKEN_CHARS and n < 128 else ord(" ") for n in range(256))
_RUN_LOOKED_AT: Final = (
    16  # the shortest run judged: base64 of printable text is read from 16 characters, a key from MIN_RUN
)
# For a small document: token characters to "a" but hex digits and "-" to "h", so a UUID's run can be blanked in C
_HEX_RUNS: Final = bytes(
    (ord("h") if chr(n) in "0123456789abcdefABCDEF-" else ord("a")) if ord(" ") != _TO_RUNS[n] else ord(" ")
    for n in range(256)
)
_H_TO_A: Final = bytes.maketrans(b"h", b"a")
_UUID_RUN: Final = b" " + b"h" * 36 + b" "
_SMALL: Final = 16384
_BLANK_UUIDS = not NATIVE
_WORDS: Final = tuple(dict.fromkeys((*TRIGGERS, *FIELD_TRIGGERS, "bearer", "basic")))
# The value patterns' prefixes (``_value_patterns.RULES``) as plain alternatives: a superset of where one
# can match, without the look-behinds RE2 has not.
_PREFIXES: Final = (
    r"-----BEGIN|A(?:KIA|SIA)|gh[pousr]_|github_pat_|glpat-|sk-|[spr]k_(?:live|test)_|xox[abeoprs]-|xapp-|AIza"
    r"|eyJ|SG\.|npm_|pypi-|hf_|hooks\.slack\.com/|://[^\s/@:\[\]\"]*:[^\s/\"]+@|sid="
    r"|sb_secret_|[12]/[0-9]{4,20}(?:/[0-9]{4,20})?:[0-9a-f]{32}|fc-[0-9a-f]{32}"  # whole: "…-41fc-b1e1…" is a UUID
)
# An escape that can join token characters into a token, or hide one: %2F between letters, &#43; ...
_ESCAPES: Final = r"[A-Za-z0-9]%[0-9A-Fa-f]{2}|%[0-9A-Fa-f]{2}[A-Za-z0-9]|&#[xX]?[0-9A-Fa-f]{1,7};"
_PGPASS: Final = r":(?:[0-9]{1,5}|\*):[^:\s\"',\\]+:[^:\s\"',\\]+:|-u[ =]"
# Strings whose structure the walk must see: JSON or an event stream's event inside a string, bytes, chunks. JSON in
# a string starts ``[`` or ``{`` then what JSON allows next, as it reads escaped: white space (`` ``, ``\n`` …), a
# quote (``\"``), a value (``[``, ``{``, a digit, ``-``, ``true``/``false``/``null``) or the end (``]``, ``}``);
# so an INI file's ``"[server]\n…`` is no hint.
_STRUCTURE: Final = r'"(?:\[[ \\\[\]{0-9tfn-]|\{[ \\}]|data:|event:|id:|\$bytes"|delta"|choices"|content_block"|chunk")'
_WORDS_RE: Final = "(?i:" + "|".join(map(re.escape, _WORDS)) + ")"
# An escaped backslash: text that holds one is walked (a backslash before ``n`` may then not start an escape).
_BACKSLASH: Final = r"\\\\"
_REST: Final = "|" + _PREFIXES + "|" + _ESCAPES + "|" + _PGPASS + "|" + _STRUCTURE + "|" + _BACKSLASH
_GATE: Any = re2.compile(_WORDS_RE + _REST)
# The gate for ASCII text (the usual JSON), as bytes: RE2's binding converts every match's offsets for ``str``.
_GATE_BYTES: Any = re2.compile(_GATE.pattern.encode("ascii"))
# A credential word is inert when the name holding it runs into one of ``+``, ``/``, ``}`` (``${DB_PASSWORD}``,
# base64 that spells ``KEY``), or on for a whole window of name characters: every rule a word gates (credential
# context, field rules, ``bearer``/``basic``, URL parameters) needs a quote, white space, a backslash (an escape),
# ``:``, ``=`` or ``>`` (XML) right after a name, and a name is at most 64 characters (``_context._MAX_NAME``).
# The direct search below asks it of RE2 itself: a word matches only with the rest of its name and the character
# after it (or the text's end), so an inert word costs no call; the search goes on from that last character.
_NAME_WINDOW: Final = 64
_NAME_CLASS: Final = "A-Za-z0-9_.\\-"
_ACTIVE_WORD: Final = f"{_WORDS_RE}[{_NAME_CLASS}]{{0,{_NAME_WINDOW - 1}}}(?:[^{_NAME_CLASS}+/}}]|$)"
_GATE_ACTIVE: Any = re2.compile((_ACTIVE_WORD + _REST).encode("ascii"))
# The compiled RE2 object's own search (``re2_match``), when this version of the binding has it.
_GATE_MATCH: Any = re2_match(_GATE_ACTIVE)
_STRUCTURE_START: Final = frozenset(('"{', '"[', '"d', '"e', '"i', '"$', '"c'))
_SHORT_LIST = re.compile(r'\["[^"\\]{0,32}"(?:,"[^"\\]{0,32}")+\]')
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_STRUCTURE_RE = re.compile(_STRUCTURE)
_HEXISH = re.compile(r"[0-9a-fA-F\-]+")
_MAX_DEPTH: Final = 2
_JUDGED: dict[str, bool] = {}
_JUDGED_SIZE: Final = 8192
# A run's findings (offsets in it) at the top level, by the character before it and the run: they depend on those
# alone, and ids, paths and hosts repeat.
_RUN_VERDICTS: dict[str, tuple[int, ...]] = {}


def _key_like_run(run: str) -> bool:
    """Whether the high-entropy rules find a key in one run of token characters (cached: ids repeat)."""
    found = _JUDGED.get(run)
    if found is None:
        if len(_JUDGED) >= _JUDGED_SIZE:
            _JUDGED.clear()
        found = _JUDGED[run] = bool(high_entropy_spans(run))
    return found


def _runs(text: str, data: bytes | None = None) -> list[tuple[int, int]]:
    """The (start, end) of every run of ``_RUN_LOOKED_AT`` or more token characters in ASCII ``text`` (of
    ``MIN_RUN`` or more, by ``RUN``, in other text); ``data``: its ASCII bytes, when they are at hand."""
    if data is None:
        if not text.isascii():
            return [match.span() for match in RUN.finditer(text)]
        data = text.encode("ascii")
    return run_spans(data.translate(_TO_RUNS), _RUN_LOOKED_AT)


def dirty_positions(
    compiled: CompiledRules,
    text: str,
    depth: int = 0,
    structure: list[int] | None = None,
    detected: set[int] | None = None,
) -> list[int]:
    """Positions in ``text`` where some rule of ``compiled`` may find a secret (a superset; unsorted).

    ``structure`` collects where the text holds something only the walk can redact (JSON in a string ...);
    ``detected`` the positions of the detector's findings."""
    found: list[int] = []
    if structure is None:
        structure = []
    if len(text) < 5:
        if "\\\\" in text:
            structure.append(0)
        return found
    data = text.encode("ascii") if text.isascii() else None  # the usual JSON: its bytes are searched once
    for secret in DETECTOR.known_tokens(text, data) if len(text) >= 16 else ():
        at = text.find(secret)
        while at >= 0:
            found.append(at)
            if detected is not None:
                detected.add(at)
            at = text.find(secret, at + len(secret))
    settle = depth == 0 and data is not None and not found  # ``clean_at`` may settle a hit where it is
    plain: bool | None = None
    for at in _gate_starts(text, data):
        if settle and text[at].isalpha():  # (a letter is inside a string: outside, JSON has true, false, null, 1e5)
            if plain is None:
                plain = "%" not in text and "&" not in text
            if clean_at(compiled, text, at, plain):
                continue
        if text[at] == '"' and text[at : at + 2] in _STRUCTURE_START and _STRUCTURE_RE.match(text, at):
            if text[at + 1] not in "{[" or json_inside(text, at):
                structure.append(at)
        elif text[at] == "\\":
            structure.append(at)  # an escaped backslash (``_BACKSLASH``)
        else:
            found.append(at)
    if depth == 0 and data is not None:
        found.extend(_run_positions(compiled, text, data))
        return found
    escapes = "\\" in text
    verdicts = _RUN_VERDICTS
    for start, end in _runs(text, data):
        if escapes:
            while start < end and text[start - 1 : start] == "\\" and escaped(text, start - 1):
                start += 5 if text[start] == "u" else 1  # the letters of an escape (\n, \u00e9) are not the token's
            if end - start < _RUN_LOOKED_AT:
                continue
        if depth == 0:  # text that is not ASCII: keyed as ``_run_positions`` keys (the escape already cut)
            key = text[start - 1 : end] if start else " " + text[:end]
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = _verdict(compiled, key)
            found.extend(start + offset for offset in verdict)
        else:
            found.extend(start + offset for offset in _run_findings(compiled, text[start:end], depth))
    return found


def _run_positions(compiled: CompiledRules, text: str, data: bytes) -> list[int]:
    """Where the runs of 16 or more token characters of ASCII JSON text hold a finding: the runs of the translated
    text found and looked up with the character before each (``_tokenruns.runs``, in C where built); a run not seen
    before is judged (``_verdict``), so the letters of an escape (``\\n``, ``\\u00e9``) are cut off once per
    distinct run, not on every sight. (Where text holds an escaped backslash, a backslash before a run may not
    start an escape; such text is walked whatever is found here.)"""
    found: list[int] = []
    if _BLANK_UUIDS and len(data) <= _SMALL and b"-" in data:
        # A small document's fixed cost is its runs, one look-up each: its UUIDs (no key and no base64 of text by
        # the rules, whatever their neighbours) are blanked before the loop instead, in C; one that shares its
        # neighbour's edge stays and is looked up. (Worth it only to the loop in Python: the C loop looks up
        # 50 UUIDs in less time than the two translations take.)
        mapped = data.translate(_HEX_RUNS).replace(_UUID_RUN, b" " * len(_UUID_RUN)).translate(_H_TO_A)
    else:
        mapped = data.translate(_TO_RUNS)
    unknown, dirty = runs(mapped, data, _RUN_LOOKED_AT, _RUN_VERDICTS)
    for at, verdict in dirty:
        found.extend(at + offset for offset in verdict)
    get = _RUN_VERDICTS.get
    for at, key in unknown:
        known = get(key)  # (a key seen earlier in this document has its verdict by now)
        judged = _verdict(compiled, key) if known is None else known
        if judged:
            found.extend(at + offset for offset in judged)
    if dirty and unknown:
        found.sort()  # in the text's order, as the runs are
    return found


def _verdict(compiled: CompiledRules, key: str) -> tuple[int, ...]:
    """The findings (offsets from the run's start) of the run ``key[1:]`` whose text has ``key[0]`` before it."""
    cut = (5 if key[1] == "u" else 1) if key[0] == "\\" else 0  # the letters of an escape are not the token's
    run = key[1 + cut :]
    verdict = () if len(run) < _RUN_LOOKED_AT else tuple(cut + offset for offset in _run_findings(compiled, run, 0))
    if len(_RUN_VERDICTS) >= _JUDGED_SIZE:
        _RUN_VERDICTS.clear()  # bounded: runs are data
    _RUN_VERDICTS[key] = verdict
    return verdict


def _run_findings(compiled: CompiledRules, run: str, depth: int) -> list[int]:
    """Offsets in one run of token characters where a rule may find a secret: the whole run if it is a
    high-entropy key, else each piece that is base64 of text holding a finding. Depends on the run only."""
    if _HEXISH.fullmatch(run) is not None:
        return []  # hex digits and dashes (digests, UUIDs): no key by the entropy rules, no base64 of text
    if len(run) >= MIN_RUN and _key_like_run(run):
        return [0]
    out: list[int] = []
    if depth < _MAX_DEPTH:
        for match in _BASE64_TEXT.finditer(run):
            if _HEXISH.fullmatch(match.group()) is not None:
                continue  # hex digits and dashes (digests, UUIDs) are no base64 of text
            decoded = base64_text(match.group())
            if decoded is not None and dirty_positions(compiled, decoded, depth + 1):
                out.append(match.start())
    return out


def _gate_starts(text: str, data: bytes | None = None) -> list[int]:
    """Where the gate matches in ``text``. On ASCII text (the usual JSON) its bytes (``data``) are searched,
    whose offsets are the characters'."""
    if data is not None:
        if _GATE_MATCH is None:
            return [match.start() for match in _GATE_BYTES.finditer(data)]
        # RE2's own search, called directly: the binding's ``finditer`` builds a match object per hit, which is
        # most of the gate's cost on a text with hundreds of hits (configuration files naming a password).
        # Inert words are not matched at all (``_ACTIVE_WORD``); a word's match ends on the character after its
        # name, which may start another hit (a quote opening JSON), so the search goes on from there.
        out: list[int] = []
        pos, size = 0, len(data)
        while pos <= size:
            start, end = _GATE_MATCH(RE2_UNANCHORED, data, pos, size)[0]
            if start < 0:
                break
            out.append(start)
            pos = end - 1 if end - 1 > start else start + 1
        return out
    if text.isascii():
        return [match.start() for match in _GATE_BYTES.finditer(text.encode("ascii"))]
    return [match.start() for match in _GATE.finditer(text)]


def needs_structure(compiled: CompiledRules, text: str, names: Collection[str] | None, structure: list[int]) -> bool:
    """Whether redacting ``text`` needs the value's structure (the walk), not only its strings."""
    if structure or not compiled.defaults:  # (an escaped backslash is in ``structure``: ``_BACKSLASH``)
        return True
    if has_string_list(text):
        for match in _SHORT_LIST.finditer(text):
            if " " in match.group() or "\\n" in match.group():
                return True  # a list of short text pieces: a stream's deltas, read whole by the walk
    # JSON inside a string would be in ``structure``: the names of the data are all its keys
    return keys_hit(compiled, text, names, trust_names=True)


def redact_json(compiled: CompiledRules, text: str, names: Collection[str] | None = None) -> str | None:
    """``text`` (compact JSON from orjson) with every secret in its strings redacted: the same object when
    clean, None when the structure is needed (then the caller walks the value)."""
    structure: list[int] = []
    detected: set[int] = set()
    positions = dirty_positions(compiled, text, 0, structure, detected)
    if needs_structure(compiled, text, names, structure):
        return None
    if not positions:
        return text
    positions.sort()
    cursor = [0, 0]
    whole = WholeWords(text)
    parts: list[str] = []
    copied = 0
    index, count = 0, len(positions)
    while index < count:
        span = string_at(text, positions[index], cursor)
        if span is None:
            index += 1
            continue
        start, end = span
        upto = bisect_right(positions, end, index)
        where, index = positions[index:upto], upto  # every finding in this string, decided together
        if text[end + 1 : end + 2] == ":":
            value = orjson.loads(text[start : end + 1])
            if scan_text(compiled, value, False) != value:
                return None  # a secret in a key: the walk redacts the key and its value together
            continue
        entropy = entropy_under(text, start)
        written = None
        if not (detected and any(pos in detected for pos in where)):
            written = scan_lines(compiled, text, span, where, whole, entropy)
        if written is None:
            value = orjson.loads(text[start : end + 1])
            redacted = scan_text(compiled, value, False, entropy=entropy)
            if redacted == value:
                continue
            written = orjson.dumps(redacted).decode("utf-8")
        elif written is UNCHANGED or not written:
            continue
        parts.append(text[copied:start])
        parts.append(written)
        copied = end + 1
    if not parts:
        return text
    parts.append(text[copied:])
    return "".join(parts)
