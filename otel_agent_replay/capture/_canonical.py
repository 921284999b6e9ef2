"""Canonical arguments: safe serialisation, canonical JSON, call keys (binding a call: ``_signature``).

One rule turns any Python value into JSON (``to_jsonable``); it never raises and is
the same at record and replay, so a call key computed at either end agrees.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import enum
import hashlib
import math
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any

import orjson

from ._flat import FLOAT_DIGITS as FLOAT_DIGITS
from ._flat import INT_RANGE as INT_RANGE
from ._flat import flat_json

JSONValue = Any
"""A value made only of dict (str keys), list, str, int, float, bool and None."""

KEY_HASH_CHARS = 12
_MAX_DEPTH = 64

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _typed_repr(value: object) -> dict[str, str]:
    cls = type(value)
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not break recording
        text = "<unrepresentable>"
    return {"$type": f"{cls.__module__}.{cls.__qualname__}", "$repr": _ADDRESS.sub("", text)}


_DUMP_OPTIONS = orjson.OPT_NON_STR_KEYS


_NOT_SIMPLE = object()


def _simple(value: object) -> Any:
    """The rule for values that convert without looking inside them, else ``_NOT_SIMPLE``."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (uuid.UUID, Decimal)):
        return str(value)
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, type) or callable(value):
        return _typed_repr(value)
    return _NOT_SIMPLE


def _default(value: object) -> Any:
    """orjson's hook for the types it does not know: one step of the rule below."""
    try:
        if isinstance(value, (set, frozenset)):
            return sorted(value, key=lambda v: orjson.dumps(v, default=_default, option=_DUMP_OPTIONS))
        simple = _simple(value)
        if simple is not _NOT_SIMPLE:
            return simple
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return dump(mode="json")
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict):
            return {k: v for k, v in attrs.items() if not k.startswith("_")}
    except Exception:
        pass
    return _typed_repr(value)


def json_text(value: object) -> str:
    """The JSON text of any value by the safe-serialisation rule (see ``to_jsonable``). Never raises."""
    text = native_json_text(value)
    if text is None:  # cycles, nesting deeper than orjson allows, odd keys, integers beyond 64 bits
        return orjson.dumps(to_jsonable_walk(value), option=_DUMP_OPTIONS).decode("utf-8")
    return text


def native_json_text(value: object) -> str | None:
    """``json_text`` when orjson takes the value as a whole (the fast path), else None."""
    try:
        return orjson.dumps(value, default=_default, option=_DUMP_OPTIONS).decode("utf-8")
    except Exception:
        return None


def plain_json_text(value: object) -> str | None:
    """``native_json_text`` of a value orjson writes without the hook and without non-string keys (plain
    JSON, dataclasses, dates, UUIDs, enums ...: the same text, on orjson's faster path), else None."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return None


def to_jsonable(value: object) -> JSONValue:
    """Turn any value into JSON data by the project's one safe-serialisation rule.

    orjson's native rules first: JSON scalars stay (non-finite floats become null; an integer
    beyond 64 bits becomes its decimal text, and the type description says it was an int);
    dicts → objects (non-string keys as strings); lists and tuples → arrays; dataclasses →
    their fields; datetime, date, time → RFC 3339 / ISO 8601; UUID → string; Enum → its value.
    Then, for what orjson does not know: sets → sorted arrays; bytes → ``{"$bytes": base64}``;
    Decimal and Path → strings; timedelta → seconds; pydantic models → ``model_dump(mode="json")``;
    other objects with ``__dict__`` → their public attributes; anything else (classes, functions,
    objects that fail) → ``{"$type": module.qualname, "$repr": repr}`` with memory addresses
    removed, so the result is stable across processes. Values orjson refuses as a whole
    (cycles, very deep nesting) go through an equivalent Python walk that marks cycles.

    Never raises; the same at record and replay.
    """
    if type(value) is dict:
        flat = flat_json(value, False)
        if flat is not None:
            return flat
    return orjson.loads(json_text(value))


def canonical_value(value: object) -> JSONValue:
    """``normalize(to_jsonable(value))``: a call's arguments as their key and the tape take them."""
    if type(value) is dict:
        flat = flat_json(value, True)
        if flat is not None:
            return flat
    return normalize(to_jsonable(value))


def to_jsonable_walk(value: object) -> JSONValue:
    """The rule of ``to_jsonable`` as a Python walk: handles cycles and any depth. Never raises."""
    try:
        return _jsonable(value, 0, set())
    except Exception:
        return _typed_repr(value)


def _jsonable(value: object, depth: int, seen: set[int]) -> JSONValue:
    if value is None or isinstance(value, (str, bool, int)):
        if isinstance(value, enum.Enum):
            return _jsonable(value.value, depth + 1, seen)
        if type(value) is int and value not in INT_RANGE:
            return str(value)
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return None
    if depth > _MAX_DEPTH:
        return {"$type": "depth", "$repr": "<nested too deep>"}
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, depth + 1, seen)
    ident = id(value)
    if ident in seen:
        return {"$type": "cycle", "$repr": "<cycle>"}
    if isinstance(value, Mapping):
        seen.add(ident)
        try:
            return {_key(k): _jsonable(v, depth + 1, seen) for k, v in value.items()}
        finally:
            seen.discard(ident)
    if isinstance(value, (list, tuple)):
        seen.add(ident)
        try:
            return [_jsonable(v, depth + 1, seen) for v in value]
        finally:
            seen.discard(ident)
    if isinstance(value, (set, frozenset)):
        items = [_jsonable(v, depth + 1, seen) for v in value]
        return sorted(items, key=lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS))
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    simple = _simple(value)
    if simple is not _NOT_SIMPLE:
        return simple
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        seen.add(ident)
        try:
            return {f.name: _jsonable(getattr(value, f.name), depth + 1, seen) for f in dataclasses.fields(value)}
        finally:
            seen.discard(ident)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _jsonable(dump(mode="json"), depth + 1, seen)
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        seen.add(ident)
        try:
            return {k: _jsonable(v, depth + 1, seen) for k, v in attrs.items() if not k.startswith("_")}
        finally:
            seen.discard(ident)
    return _typed_repr(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, enum.Enum):
        key = key.value
    plain = to_jsonable_walk(key)
    return plain if isinstance(plain, str) else orjson.dumps(plain, option=orjson.OPT_SORT_KEYS).decode()


def normalize(value: JSONValue) -> JSONValue:
    """Normalise JSON data for keys: strip strings, drop None-valued keys, round floats.

    Key order is settled when the value is dumped (``canonical_json`` sorts keys).
    ``3`` and ``"3"`` stay different, and so do ``True`` and ``1``.
    """
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, float):
        return round(value, FLOAT_DIGITS)
    return value


def dumps_canonical(value: JSONValue) -> str:
    """Dump JSON data already normalised: sorted keys, compact, UTF-8 without ASCII escapes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")


def canonical_json(value: object) -> str:
    """The canonical JSON text of any value (safe-serialised, normalised, keys sorted)."""
    return dumps_canonical(normalize(to_jsonable(value)))


def key_from_json(tool: str, canonical_args: str) -> str:
    """Call key from a tool name and its canonical argument JSON.

    Remembered for short texts (a bounded memo, cleared when full): the same arguments recur call after
    call, and a sha256 through OpenSSL costs more to set up than to run on them. The memo holds the
    texts as the calls' own captured arguments are held, in this process's memory only.
    """
    if len(canonical_args) > _KEY_MEMO_CHARS:
        return _key_of(tool, canonical_args)
    memo_key = (tool, canonical_args)
    found = _key_memo.get(memo_key)
    if found is None:
        found = _key_of(tool, canonical_args)
        if len(_key_memo) >= _KEY_MEMO_ENTRIES:
            _key_memo.clear()
        _key_memo[memo_key] = found
    return found


_KEY_MEMO_CHARS = 1024
_KEY_MEMO_ENTRIES = 4096
_key_memo: dict[tuple[str, str], str] = {}


def _key_of(tool: str, canonical_args: str) -> str:
    digest = hashlib.sha256(canonical_args.encode("utf-8")).hexdigest()
    return f"{tool}:{digest[:KEY_HASH_CHARS]}"


def call_key(tool: str, args: object) -> str:
    """``tool + ":" + sha256(canonical_json(args))[:12]``.

    ``args`` must already be redacted when the key is compared with a tape.
    """
    return key_from_json(tool, canonical_json(args))


def hash_text(text: str) -> str:
    """Full sha256 hex digest of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
