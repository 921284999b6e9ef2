"""Deciding a JSON string of compact JSON text by the lines that hold a finding, in place.

A configuration file, a log or a page returned as one string holds many lines, and the one pass
(``_onepass``) has already found every position where a rule may match. Every rule that can fire
inside such a string reads its line and one character around it (the field rules, the credential
context, the value patterns other than a private key block, the high-entropy runs, base64 of text), so
only the lines holding a position need the rule set, each decided with the line breaks around it
(``_in_context``: ``key=v`` at a string's start is a URL parameter, after a line break it is not); the
rest of the string is left byte for byte. A line's decision depends on that text and on whether the
string is under an identifier's key, so it is remembered: configuration repeats lines
(``DATABASE_PASSWORD: ${DATABASE_PASSWORD}``) across files. A string of one line is that line.

The lines are found in the document's text itself (between ``\\n`` escapes or the string's quotes), so a
finding costs two bounded searches and a look-up, not a copy of its string (``clean_at`` settles a gate
hit so, before the string's bounds are even counted). The string is decided whole (``None`` from
``scan_lines``) where a rule reads past a line: a private key block (``-----BEGIN``), a ``.netrc``
(``machine``/``login`` change how ``password x`` is read; ``WholeWords`` finds those words once a
document), a ``%`` or ``&`` (the decoded forms are read of the whole string, and name what they find
there), a detector finding (the maintained rules may match with context from other lines), an escaped
backslash (the lines are cut at ``\\n`` escapes).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Final

import orjson

from ._jsontext import closing_quote, opening_quote
from ._redact_rules import CompiledRules
from ._scan import scan_text

__all__ = ["UNCHANGED", "WholeWords", "clean_at", "scan_lines"]

_MEMO_SIZE: Final = 4096
_MEMO_LINE: Final = 1024
_WHOLE_WORDS: Final = ("-----begin", "machine", "login")
_WHOLE: Final = "\x00whole"
UNCHANGED: Final = ""
"""What ``scan_lines`` gives for a string whose lines are clean (a JSON string is never empty text)."""


class WholeWords:
    """Where the words that make a string be decided whole are in one document's text (found on first need)."""

    __slots__ = ("_at", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._at: list[int] | None = None

    def within(self, start: int, end: int) -> bool:
        """Whether one of the words is in ``text[start:end]``."""
        at = self._at
        if at is None:
            if not self._text.isascii():  # lower-casing may change the length of other text: string by string
                lowered = self._text[start:end].lower()
                return any(word in lowered for word in _WHOLE_WORDS)
            lowered = self._text.lower()
            found: list[int] = []
            for word in _WHOLE_WORDS:
                pos = lowered.find(word)
                while pos >= 0:
                    found.append(pos)
                    pos = lowered.find(word, pos + 1)
            at = self._at = sorted(found)
        if not at:
            return False
        index = bisect_left(at, start)
        return index < len(at) and at[index] < end  # (a word cannot run on past the string's closing quote)


def scan_lines(
    compiled: CompiledRules,
    text: str,
    span: tuple[int, int],
    where: list[int],
    whole: WholeWords,
    entropy: bool,
) -> str | None:
    """The JSON string ``text[start:end + 1]`` (``span``: its quotes) with its dirty lines decided, as JSON text;
    ``UNCHANGED`` when they are clean; ``None`` when it must be decided whole. ``where``: the findings in it
    (sorted), none of them the detector's."""
    start, end = span
    find, rfind = text.find, text.rfind
    if find("\\\\", start, end) >= 0 or _decoded_whole(text, start, end) or whole.within(start, end):
        return None
    lines: dict[int, int] = {}  # line start -> line end, in ``text``
    for pos in where:
        at = min(max(pos, start + 1), end - 1)
        line_start = rfind("\\n", start + 1, at + 1)
        line_start = start + 1 if line_start < 0 else line_start + 2
        if line_start > at:  # the position is on the escape itself: the next line
            at = line_start
        if line_start in lines:
            continue
        line_end = find("\\n", at, end)
        lines[line_start] = end if line_end < 0 else line_end
    parts: list[str] | None = None
    copied = start
    for line_start, line_end in sorted(lines.items()) if len(lines) > 1 else lines.items():
        decided = _decide(compiled, _in_context(text, line_start, line_end, start, end), entropy)
        if decided is None:
            return None
        if decided:
            if parts is None:
                parts = []
            parts.append(text[copied:line_start])
            parts.append(decided)
            copied = line_end
    if parts is None:
        return UNCHANGED
    parts.append(text[copied : end + 1])
    return "".join(parts)


def clean_at(compiled: CompiledRules, text: str, at: int, plain: bool) -> bool:
    """Whether a gate hit at ``at`` (inside a JSON string of ASCII text with no escaped backslash, in a document
    the detector found nothing in) is settled: its line is clean under every rule, the high-entropy layer
    included (so under an identifier's key too), and its string holds nothing that reads past a line. Then the
    hit needs neither its string's bounds from the quote count nor its key: one look at its line. ``plain``:
    the document has no ``%`` and no ``&`` (``_decoded_whole`` is then False for every string)."""
    find, rfind = text.find, text.rfind
    start = opening_quote(text, rfind('"', 0, at))
    end = closing_quote(text, at)
    if start < 0 or end < 0:
        return False
    line_start = rfind("\\n", start + 1, at + 1)
    line_start = start + 1 if line_start < 0 else line_start + 2
    line_end = find("\\n", max(at, line_start), end)
    try:
        if _decide(compiled, _in_context(text, line_start, end if line_end < 0 else line_end, start, end), True) != "":
            return False
    except orjson.JSONDecodeError:
        return False  # not a line of a string after all (text with an escaped backslash, which is walked)
    if not plain and _decoded_whole(text, start, end):
        return False
    lowered = text[start:end].lower()  # (the words of ``_WHOLE_WORDS``, spelled out: a generator costs more here)
    return not ("machine" in lowered or "login" in lowered or "-----begin" in lowered)


def _decoded_whole(text: str, start: int, end: int) -> bool:
    """Whether the string may have a URL-encoded or HTML-escaped form: the decoded-forms layer reads that form of
    the whole string, and what it finds there on any line is named as it names it (``encoded_secret``)."""
    return text.find("%", start, end) >= 0 or text.find("&", start, end) >= 0


def _in_context(text: str, line_start: int, line_end: int, start: int, end: int) -> str:
    """A line of the string ``text[start:end + 1]`` with the line break before and after it, where it has them: a
    rule that looks one character past a name reads there what it reads in the whole string (the string's start is
    not a line's: ``key=v`` at a string's start is a URL parameter, after a line break it is not)."""
    return text[line_start - (2 if line_start > start + 1 else 0) : line_end + (2 if line_end < end else 0)]


def _decide(compiled: CompiledRules, segment: str, entropy: bool) -> str | None:
    """A line (``_in_context``: its JSON-escaped text, line breaks around it kept) redacted and escaped again,
    without those line breaks; ``""`` when it is clean; None when a rule changed a line break (then the string is
    decided whole). Remembered up to a length: a long line is a whole page, or base64."""
    key = (segment, entropy)
    memo = compiled.line_cache
    found = memo.get(key)
    if found is None:
        line = orjson.loads(f'"{segment}"')
        redacted = scan_text(compiled, line, False, entropy=entropy)
        found = "" if redacted == line else orjson.dumps(redacted).decode("utf-8")[1:-1]
        if found:  # (a line holds no line break: a segment starts or ends with one only where it was put around)
            head, tail = segment.startswith("\\n"), segment.endswith("\\n")
            if (head and not found.startswith("\\n")) or (tail and not found.endswith("\\n")):
                found = _WHOLE
            else:
                found = found[2 if head else 0 : len(found) - (2 if tail else 0)] or _WHOLE
        if len(segment) <= _MEMO_LINE:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()  # bounded: lines are data
            memo[key] = found
    return None if found is _WHOLE else found
