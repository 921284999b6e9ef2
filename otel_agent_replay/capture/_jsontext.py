"""Reading compact JSON text in place: where a string opens and closes, its key, JSON inside it.

The one pass (``_onepass``) finds positions in a document's serialised text; these helpers say which JSON
string holds a position (by counting the unescaped quotes before it, exact in orjson's output), whether a
string is under a key naming an identifier (so the high-entropy layer leaves it), and whether a string holds
JSON itself (a tool that returns ``json.dumps(...)``), without parsing the document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson
import re2  # type: ignore[import-untyped]

from ._entropy import is_identifier_key

__all__ = [
    "RE2_UNANCHORED",
    "entropy_under",
    "escaped",
    "has_escaped_quote",
    "has_string_list",
    "json_inside",
    "re2_match",
    "string_at",
]

_SIZE: Final = 8192
# From this length a literal of two characters is looked for by RE2 in ASCII text: ``str``'s own search steps
# through JSON text with many backslashes (line breaks) about a character at a time, 6x slower on 100 KB.
_LONG: Final = 4096
RE2_UNANCHORED: Any = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
"""The anchor ``re2_match``'s search takes for an unanchored search (None in a binding without it)."""
# Whether a string under a key (its JSON text, quotes and all) is judged by the high-entropy layer.
_ENTROPY_UNDER: dict[str, bool] = {}


def json_inside(text: str, at: int) -> bool:
    """Whether the JSON string opening at ``at`` holds JSON itself (a tool that returns ``json.dumps(...)``)."""
    end = text.find('"', at + 1)
    while end > 0 and text[end - 1] == "\\" and escaped(text, end - 1):
        end = text.find('"', end + 1)
    last = text[end - 1 : end]
    if last not in "]} " and text[end - 2 : end - 1] != "\\" and text[end - 6 : end - 4] != "\\u":
        return False  # JSON ends with ``]``, ``}`` or white space (`` ``, ``\\n`` …), not INI's ``[server]\\n…``
    try:
        inner = orjson.loads(text[at : end + 1])
        orjson.loads(inner)
    except (orjson.JSONDecodeError, TypeError):
        return False
    return True


def escaped(text: str, at: int) -> bool:
    """Whether the backslash at ``at`` starts an escape (an odd run of backslashes ends there)."""
    n = 0
    while at - n >= 0 and text[at - n] == "\\":
        n += 1
    return n % 2 == 1


def string_at(text: str, pos: int, cursor: list[int]) -> tuple[int, int] | None:
    """The (opening quote, closing quote) of the JSON string holding ``pos``, or None if ``pos`` is outside.

    ``cursor`` carries [position, quotes before it] from the previous call (positions come sorted)."""
    last, quotes = cursor
    quotes += text.count('"', last, pos) - text.count('\\"', max(0, last - 1), pos)
    cursor[0], cursor[1] = pos, quotes
    if quotes % 2 == 0 and text[pos] != '"':
        return None
    start = opening_quote(text, pos if text[pos] == '"' and quotes % 2 == 0 else text.rfind('"', 0, pos))
    end = closing_quote(text, start + 1)
    if start < 0 or end < 0:
        return None
    return start, end


def opening_quote(text: str, found: int) -> int:
    """``found`` (a quote's position, or -1), or the nearest quote before it that no backslash precedes."""
    while found > 0 and text[found - 1] == "\\":
        found = text.rfind('"', 0, found - 1)
    return found


def closing_quote(text: str, at: int) -> int:
    """The first quote from ``at`` on that no backslash precedes, or -1."""
    end = text.find('"', at)
    while end > 0 and text[end - 1] == "\\":
        end = text.find('"', end + 1)
    return end


def entropy_under(text: str, start: int) -> bool:
    """Whether the high-entropy layer judges the string opening at ``start``: not under a key naming an identifier."""
    if start < 2 or text[start - 1] != ":" or text[start - 2] != '"':
        return True
    key_start = text.rfind('"', 0, start - 2)
    while key_start > 0 and text[key_start - 1] == "\\":
        key_start = text.rfind('"', 0, key_start - 1)
    raw = text[key_start : start - 1]
    found = _ENTROPY_UNDER.get(raw)
    if found is None:
        try:
            key = orjson.loads(raw)
        except orjson.JSONDecodeError:
            key = None
        found = not (isinstance(key, str) and is_identifier_key(key))
        if len(_ENTROPY_UNDER) >= _SIZE:
            _ENTROPY_UNDER.clear()  # bounded: keys are data
        _ENTROPY_UNDER[raw] = found
    return found


def re2_match(compiled: Any) -> Any:
    """The compiled RE2 object's own search, ``match(RE2_UNANCHORED, data, pos, endpos)[0]`` giving the first
    match's (start, end) in bytes or (-1, -1), when this version of the binding has it; else None. (The binding's
    ``search`` and ``finditer`` build a match object for every hit, the larger cost where hits are many.)"""
    if RE2_UNANCHORED is None:
        return None
    return getattr(getattr(compiled, "_regexp", None), "Match", None)


def _literal_search(needle: str) -> Callable[[str], bool]:
    """A test for ``needle in text`` that asks RE2 (on the text's bytes) when the text is long and ASCII."""
    match = re2_match(re2.compile(re2.escape(needle).encode("ascii")))
    if match is None:
        return lambda text: needle in text  # (a binding without the compiled object's own search)

    def holds(text: str) -> bool:
        if len(text) < _LONG or not text.isascii():
            return needle in text
        data = text.encode("ascii")
        return bool(match(RE2_UNANCHORED, data, 0, len(data))[0][0] >= 0)

    return holds


has_escaped_quote: Final = _literal_search('\\"')
"""Whether compact JSON text holds an escaped quote (``\\"``: a string with a quote in it)."""
has_string_list: Final = _literal_search('["')
"""Whether compact JSON text holds ``["`` (a list that starts with a string)."""
