"""Strict JSON for tapes: no repeated keys, no NaN or Infinity, and problems said in words.

``orjson`` (the loader's fast parser) refuses NaN and Infinity but silently keeps one value of a
repeated key; the standard library accepts all three. The pieces here close those gaps: a pairs
hook that refuses a repeated key, a standard-library scanner that also refuses non-finite numbers,
and the texts that name what a parser refused.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import math
import re
import sys
from typing import Any, Final

import orjson

__all__ = [
    "NON_FINITE_PROBLEM",
    "DuplicateKeyError",
    "StrictScanner",
    "duplicate_position",
    "json_kind",
    "json_kind_at",
    "json_problem",
    "refuse_duplicate_pairs",
]

NON_FINITE_PROBLEM: Final = "NaN and Infinity are not JSON numbers, and a tape must be strict JSON"
_NON_FINITE: Final = "non-finite number"  # how the scanner's refusals start, to tell them apart

_non_finite_literal = re.compile(r"[:\[,][ \t\n\r]*(-?(?:NaN|Infinity))").search


class DuplicateKeyError(Exception):
    """A key repeated in one JSON object. ``pos``: where that object opens, once it is known."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key
        self.pos: int | None = None


def refuse_duplicate_pairs(pairs: list[tuple[str, Any]]) -> None:
    """A pairs hook that only checks: raises ``DuplicateKeyError``, and builds nothing."""
    if len(pairs) > 1 and len(dict(pairs)) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)


def _dict_refusing_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        refuse_duplicate_pairs(pairs)
    return out


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{_NON_FINITE} {name}")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{_NON_FINITE} {text}")
    return number


_HUGE: Final = "integer too long for Python:"
_MAX_DIGITS: Final = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 1_000_000


def _bounded_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > _MAX_DIGITS:
        raise ValueError(f"{_HUGE} {digits} digits (the limit is {_MAX_DIGITS})")
    return int(text)


class StrictScanner:
    """The standard library's JSON scanner, refusing repeated keys, NaN and Infinity."""

    __slots__ = ("_scan",)

    def __init__(self) -> None:
        decoder = json.JSONDecoder(
            object_pairs_hook=_dict_refusing_duplicates,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
        self._scan = json.scanner.make_scanner(decoder)  # type: ignore[arg-type]  # typeshed: the context is a decoder

    def value(self, text: str, pos: int) -> tuple[Any, int]:
        """The JSON value at ``pos`` and where it ends.

        Raises ``json.JSONDecodeError`` (a non-finite number: at the literal) or ``DuplicateKeyError``.
        """
        try:
            return self._scan(text, pos)
        except StopIteration as stop:
            raise json.JSONDecodeError("Expecting value", text, stop.value) from None
        except RecursionError:
            raise json.JSONDecodeError("nested too deeply", text, pos) from None
        except ValueError as err:
            if not isinstance(err, json.JSONDecodeError) and str(err).startswith(_NON_FINITE):
                found = _non_finite_literal(text, pos)
                raise json.JSONDecodeError(str(err), text, found.start(1) if found else pos) from None
            if not isinstance(err, json.JSONDecodeError) and str(err).startswith(_HUGE):
                long_run = re.compile(rf"-?[0-9]{{{_MAX_DIGITS + 1},}}").search(text, pos)
                raise json.JSONDecodeError(str(err), text, long_run.start() if long_run else pos) from None
            raise


def json_problem(exc: json.JSONDecodeError) -> str:
    """What a parser (orjson or ``StrictScanner``) refused, for an error message."""
    if isinstance(exc, orjson.JSONDecodeError):  # orjson names no non-finite number: look at the text
        doc = exc.doc if isinstance(exc.doc, str) else ""
        non_finite = doc[exc.pos : exc.pos + 9].lstrip("-").startswith(("NaN", "Infinity"))
    else:
        non_finite = exc.msg.startswith(_NON_FINITE)
    if non_finite:
        return NON_FINITE_PROBLEM
    return f"invalid JSON ({exc.msg} at column {exc.colno})"


def duplicate_position(text: str, start: int) -> int:
    """Where the object with a repeated key opens, in the value at ``start`` (slow: error path only)."""
    decoder = json.decoder.JSONDecoder(object_pairs_hook=refuse_duplicate_pairs)

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        try:
            return json.decoder.JSONObject(s_and_end, *args)  # type: ignore[attr-defined,no-any-return]
        except DuplicateKeyError as dup:
            if dup.pos is None:
                dup.pos = s_and_end[1] - 1
            raise

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    scan = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        scan(text, start)
    except DuplicateKeyError as dup:
        if dup.pos is not None:
            return int(dup.pos)
    except (ValueError, RecursionError, StopIteration):
        pass
    return start


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in words: ``an array``, ``null``, ..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return "an object"


_KIND_BY_FIRST_CHAR: Final = {
    "{": "an object",
    "[": "an array",
    '"': "a string",
    "t": "a boolean",
    "f": "a boolean",
    "n": "null",
    "": "the end of the text",
}


def json_kind_at(text: str, pos: int) -> str | None:
    """What the JSON value at ``pos`` is, from its first character; None when it is no value."""
    char = text[pos : pos + 1]
    if char and (char.isdigit() or char == "-"):
        return "a number"
    return _KIND_BY_FIRST_CHAR.get(char)
