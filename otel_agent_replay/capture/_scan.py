"""Scanning one string: the value patterns, the field rules, the user's patterns, personal data.

``Redactor`` walks JSON data and hands each string here; ``Redactor.may_redact`` asks
``fields_hit`` of compact JSON text. The rules come compiled (``_redact_rules.CompiledRules``).
"""

from __future__ import annotations

import re
from typing import Final

from ._layers import may_hold, redact_layers
from ._redact_rules import FIELD_LOOKBACK, MAX_ANCHOR_OFFSET, CompiledRules, pattern_placeholder, redact_pii

# A field rule's ":" or "=" is followed by a space, a tab or a quote (in JSON text, an escaped one).
# One regex per character, each with a literal first character, is far cheaper than one alternation.
_RAW_MARKS: Final = (re.compile(r"""=[ \t'"]"""), re.compile(r""":[ \t'"]"""))
_JSON_MARKS: Final = (re.compile(r"""=[ \t'\\]"""), re.compile(r""":[ \t'\\]"""))


def _substitute(pattern: re.Pattern[str], placeholder: str, text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        return placeholder if match.end() > match.start() else ""

    return pattern.sub(replace, text)


def scan_text(compiled: CompiledRules, text: str, pii: bool, entropy: bool = True) -> str:
    """One string with the value patterns, field rules, the three layers (``_layers``), user patterns (and
    personal data) redacted. ``entropy=False``: the value is an identifier (under an ``id`` key), so the
    high-entropy layer leaves it."""
    if len(text) >= compiled.min_len:
        for guard, prefilter in compiled.prefilters:
            if guard in text and prefilter.search(text) is not None:
                text = _replace(compiled, text)
                break
    # the layers' gate looks for every field rule's trigger word too: text it rules out skips both
    hold = not compiled.defaults or may_hold(text)
    if hold and compiled.fields is not None and len(text) >= compiled.min_len and (":" in text or "=" in text):
        text = _fields(compiled, text, compiled.fields)
    if hold and compiled.defaults:
        text = redact_layers(text, entropy, gated=True)
    for pattern, placeholder in compiled.separate:
        if pattern.search(text) is not None:
            text = _substitute(pattern, placeholder, text)
    if pii:
        text = redact_pii(text)
    return text


def _field_starts(compiled: CompiledRules, text: str, marks: tuple[re.Pattern[str], re.Pattern[str]]) -> list[int]:
    """Where a field rule may match (sorted, unique): a little before each trigger word, in text
    that has a ``:`` or ``=`` followed by a space or a quote (one cheap search rules most text out)."""
    equals, colon = marks
    if not ("=" in text and equals.search(text) is not None) and not (":" in text and colon.search(text)):
        return []
    lowered = text.lower()
    starts: set[int] = set()
    for word in compiled.field_triggers:
        at = lowered.find(word)
        while at >= 0:
            starts.update(range(max(0, at - FIELD_LOOKBACK), at + 1))
            at = lowered.find(word, at + 1)
    return sorted(starts)


def _fields(compiled: CompiledRules, text: str, fields: re.Pattern[str]) -> str:
    """Redact secrets named in free text: header lines, quoted fields (a repr, kwargs, JSON in prose)."""
    starts = _field_starts(compiled, text, _RAW_MARKS)
    if not starts:
        return text
    placeholders = compiled.placeholders
    parts: list[str] = []
    copied = 0
    for start in starts:
        if start < copied:
            continue
        match = fields.match(text, start)
        if match is None or match.lastgroup is None:
            continue
        secret_start, secret_end = match.span(match.lastgroup)
        if secret_end <= secret_start:
            continue
        parts.append(text[copied:secret_start])
        parts.append(placeholders[match.lastgroup])
        copied = secret_end
    if not parts:
        return text
    parts.append(text[copied:])
    return "".join(parts)


def fields_hit(compiled: CompiledRules, text: str) -> bool:
    """Whether a field rule may match in compact JSON text (the pre-check's question)."""
    fields = compiled.fields
    if fields is None or (":" not in text and "=" not in text):
        return False
    return any(fields.match(text, start) is not None for start in _field_starts(compiled, text, _JSON_MARKS))


def _replace(compiled: CompiledRules, text: str) -> str:
    gate, full = compiled.gate, compiled.full
    if gate is None or full is None:
        return text
    parts: list[str] = []
    copied = 0  # text[:copied] is in parts
    pos = 0  # every position before pos has been tried as the start of a match
    end = len(text)
    while pos < end:
        hit = gate.search(text, pos)
        if hit is None:
            break
        anchor = hit.start()
        # A match starts at most MAX_ANCHOR_OFFSET characters before its anchor, so
        # trying those few positions finds the leftmost match, as finditer would,
        # without running the full alternation at every position of the string.
        start = max(pos, anchor - MAX_ANCHOR_OFFSET)
        match = None
        while start <= anchor:
            match = full.match(text, start)
            if match is not None and match.end() > match.start():
                break
            match = None
            start += 1
        if match is None:
            pos = anchor + 1
            continue
        name = match.lastgroup
        if name is None:  # every branch has one named group; kept for safety
            secret_start, secret_end = match.span()
            placeholder = pattern_placeholder("secret")
        else:
            secret_start, secret_end = match.span(name)
            placeholder = compiled.placeholders[name]
        parts.append(text[copied:secret_start])
        parts.append(placeholder)
        copied = secret_end
        pos = match.end()
    if not parts:
        return text
    parts.append(text[copied:])
    return "".join(parts)
