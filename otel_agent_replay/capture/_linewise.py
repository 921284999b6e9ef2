"""Deciding a long multi-line string of compact JSON text by the lines that hold a finding.

A configuration file, a log or a page returned as one string holds many lines, and the one pass
(``_onepass``) has already found every position where a rule may match. Every rule that can fire
inside such a string is local to a line (the field rules, the credential context, the value patterns
other than a private key block, the high-entropy runs, the escapes and base64 of text), so only the
lines holding a position need the rule set; the rest of the string is left byte for byte. A line's
decision depends on its text and on whether the string is under an identifier's key, so it is
remembered: configuration repeats lines (``DATABASE_PASSWORD: ${DATABASE_PASSWORD}``) across files.

The string is decided whole (``None`` from ``scan_lines``) where a rule reads past a line: a private
key block (``-----BEGIN``), a ``.netrc`` (``machine``/``login`` change how ``password x`` is read), a
detector finding (the maintained rules may match with context from other lines), a backslash escape
(the lines are cut at ``\\n`` escapes, so text with an escaped backslash is not cut here), and a
position outside the string's lines.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Final

import orjson

from ._redact_rules import CompiledRules
from ._scan import scan_text

__all__ = ["scan_lines"]

_MIN_CHARS: Final = 256
_MEMO_SIZE: Final = 4096
_WHOLE_WORDS: Final = ("-----begin", "machine", "login")


def scan_lines(
    compiled: CompiledRules, text: str, start: int, end: int, positions: list[int], detected: set[int], entropy: bool
) -> str | None:
    """The JSON string ``text[start:end + 1]`` (quotes included) with its dirty lines decided, as JSON text;
    ``None`` when it must be decided whole. ``positions``: every finding of the text (sorted); ``detected``:
    those the detector made."""
    find = text.find
    if end - start < _MIN_CHARS or find("\\n", start, end) < 0 or find("\\\\", start, end) >= 0:
        return None  # (searched in place: no copy of the string for it)
    first, last = bisect_left(positions, start), bisect_right(positions, end)
    if any(positions[i] in detected for i in range(first, last)):
        return None
    raw = text[start + 1 : end]
    lowered = raw.lower()
    if any(word in lowered for word in _WHOLE_WORDS):
        return None
    lines: dict[int, int] = {}  # line start -> line end, in ``raw``
    for i in range(first, last):
        at = max(0, positions[i] - start - 1)
        if at >= len(raw):
            at = len(raw) - 1
        line_start = raw.rfind("\\n", 0, at + 1)
        line_start = 0 if line_start < 0 else line_start + 2
        if line_start > at:  # the position is on the escape itself: the next line
            at = line_start
        if line_start in lines:
            continue
        line_end = raw.find("\\n", at)
        lines[line_start] = len(raw) if line_end < 0 else line_end
    parts: list[str] = ['"']
    copied = 0
    for line_start in sorted(lines):
        line_end = lines[line_start]
        segment = raw[line_start:line_end]
        decided = _decide(compiled, segment, entropy)
        if decided is not None:
            parts.append(raw[copied:line_start])
            parts.append(decided)
            copied = line_end
    if copied == 0 and len(parts) == 1:
        return text[start : end + 1]
    parts.append(raw[copied:])
    parts.append('"')
    return "".join(parts)


def _decide(compiled: CompiledRules, segment: str, entropy: bool) -> str | None:
    """A line's JSON-escaped text redacted (escaped again), or None when it is clean."""
    key = (segment, entropy)
    memo = compiled.line_cache
    found = memo.get(key)
    if found is None:
        line = orjson.loads(f'"{segment}"')
        redacted = scan_text(compiled, line, False, entropy=entropy)
        found = "" if redacted == line else orjson.dumps(redacted).decode("utf-8")[1:-1]
        if len(memo) >= _MEMO_SIZE:
            memo.clear()  # bounded: lines are data
        memo[key] = found
    return found or None
