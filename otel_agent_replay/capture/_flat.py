"""Dicts of scalars made JSON data without writing and reading their text.

A call's arguments are mostly a few names bound to text and numbers, or (an HTTP step's) a dict or two of
them: ``{"query": {"q": "lamp"}}``. ``to_jsonable`` (and, for keys, ``canonical_value``) take such a dict
through here, and anything else through orjson and back.
"""

from __future__ import annotations

import math
from typing import Any, Final

JSONValue = Any

FLOAT_DIGITS = 6
"""Floats in call keys are rounded to this many digits (``normalize``)."""

INT_RANGE: Final = range(-(2**63), 2**64)
"""The integers orjson writes as JSON numbers; others are kept as their decimal text (see ``to_jsonable``)."""


_NESTING = 4
"""How deep the shortcut follows dicts and lists inside the arguments (an HTTP step's ``{"query": {...}}`` is 2);
deeper data, and a cycle, take the rule's own path."""


def flat_json(value: dict[Any, Any], normal: bool) -> dict[str, JSONValue] | None:
    """A dict of ASCII text keys and values that JSON gives back as they are (ASCII text, bool, None, integers
    orjson writes, finite floats, and dicts, lists and tuples of those a few levels deep), as
    ``orjson.loads(json_text(value))`` makes it (and, when ``normal``, then ``normalize``), without writing
    and reading the text: a call's arguments, usually. None for any other dict, which takes the rule's own
    path."""
    return _object(value, normal, _NESTING)


def _object(value: dict[Any, Any], normal: bool, depth: int) -> dict[str, JSONValue] | None:
    out: dict[str, JSONValue] = {}
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return None
        if item is None:
            if not normal:  # normalize drops a key whose value is None
                out[key] = None
            continue
        made = _item(item, type(item), normal, depth)
        if made is _DECLINED:
            return None
        out[key] = made
    return out


_DECLINED: Any = object()


def _item(item: Any, kind: type, normal: bool, depth: int) -> JSONValue:
    """One value inside a dict or a list, as the rule makes it, or ``_DECLINED``."""
    if kind is str:
        if not item.isascii():  # a lone surrogate is not UTF-8: the rule's own path decides it
            return _DECLINED
        return item.strip() if normal else item
    if kind is int:
        return item if item in INT_RANGE else _DECLINED
    if kind is float:
        if not -math.inf < item < math.inf:  # NaN and the infinities become null
            return _DECLINED
        return round(item, FLOAT_DIGITS) if normal else item
    if item is None or kind is bool:
        return item
    if depth <= 1:
        return _DECLINED
    if kind is dict:
        made = _object(item, normal, depth - 1)
        return _DECLINED if made is None else made
    if kind is list or kind is tuple:
        out: list[JSONValue] = []
        for element in item:
            element_made = _item(element, type(element), normal, depth - 1)
            if element_made is _DECLINED:
                return _DECLINED
            out.append(element_made)
        return out
    return _DECLINED
