"""Flat dicts of scalars made JSON data without writing and reading their text.

A call's arguments are mostly a few names bound to text and numbers. ``to_jsonable`` (and, for keys,
``canonical_value``) take such a dict through here, and anything else through orjson and back.
"""

from __future__ import annotations

import math
from typing import Any, Final

JSONValue = Any

FLOAT_DIGITS = 6
"""Floats in call keys are rounded to this many digits (``normalize``)."""

INT_RANGE: Final = range(-(2**63), 2**64)
"""The integers orjson writes as JSON numbers; others are kept as their decimal text (see ``to_jsonable``)."""


def flat_json(value: dict[Any, Any], normal: bool) -> dict[str, JSONValue] | None:
    """A dict of ASCII text keys and scalar values that JSON gives back as they are (ASCII text, bool, None,
    integers orjson writes, finite floats), as ``orjson.loads(json_text(value))`` makes it (and, when
    ``normal``, then ``normalize``), without writing and reading the text: a call's arguments, usually.
    None for any other dict, which takes the rule's own path."""
    out: dict[str, JSONValue] = {}
    for key, item in value.items():
        if type(key) is not str or not key.isascii():
            return None
        kind = type(item)
        if kind is str:
            if not item.isascii():  # a lone surrogate is not UTF-8: the rule's own path decides it
                return None
            out[key] = item.strip() if normal else item
        elif kind is int:
            if item not in INT_RANGE:
                return None
            out[key] = item
        elif kind is float:
            if not -math.inf < item < math.inf:  # NaN and the infinities become null
                return None
            out[key] = round(item, FLOAT_DIGITS) if normal else item
        elif item is None:
            if not normal:
                out[key] = None
        elif kind is bool:
            out[key] = item
        else:
            return None
    return out
