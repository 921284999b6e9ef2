"""Faithful results, the record side: what type a value had, in a form the tape can keep.

The tape keeps a result as plain JSON (the safe-serialisation rule of ``_canonical``); beside it a
*type description* (``describe``) says what JSON cannot: that this array was a tuple, this string a
``datetime``, this object a dataclass. ``plain_json_names`` answers, in one walk, whether a result
is plain JSON (then it needs no description) and which names in it redaction decides. The replay
side, which turns the JSON back into the value, is ``_rebuild``.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime as _dt
import enum
import uuid
from decimal import Decimal
from itertools import chain
from pathlib import PurePath
from typing import Any

import orjson

from ._canonical import INT_RANGE, JSONValue, native_json_text, to_jsonable

Description = Any
"""A type description: None (plain JSON, as is) or a small JSON object (see ``describe``)."""

MAX_DEPTH = 64
PLAIN_TYPES = (str, int, float, bool, type(None))


def class_name(cls: type) -> str:
    """``module.qualname`` of a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _is_model(value: object) -> bool:
    return callable(getattr(type(value), "model_validate", None)) and callable(getattr(value, "model_dump", None))


# --- record side ------------------------------------------------------------------------------


class _Lossy(list[str]):
    """The types found that cannot come back as themselves; ``unnamed``: classes defined inside a
    function, which replay cannot find by name (only a return annotation can rebuild them)."""

    def __init__(self) -> None:
        super().__init__()
        self.unnamed: list[str] = []


def describe(value: object) -> tuple[Description, list[str]]:
    """The type description of a value, and the types in it that cannot come back as themselves.

    A class defined inside a function is listed as ``"<name> (defined inside a function)"``: only a
    return annotation or ``result_type=`` can rebuild it (see ``unnamed_suffix``).

    None means the value is plain JSON and comes back as it is. Otherwise a JSON object with
    ``t`` (the kind) and, as needed, ``c`` (a class name), ``i`` (the descriptions of a list's,
    tuple's or set's items), ``v`` (of a dict's values, by key), ``k`` (of its non-string keys),
    ``f`` (of a dataclass's fields). Never raises.
    """
    # plain JSON that orjson refuses as it is (integers beyond 64 bits) is described
    if is_plain_json(value) and native_json_text(value) is not None:
        return None, []
    lossy = _Lossy()
    try:
        desc = _describe(value, 0, lossy)
        return desc, [*lossy, *(f"{name}{UNNAMED}" for name in dict.fromkeys(lossy.unnamed))]
    except Exception:
        return None, [class_name(type(value))]


_SCALARS = frozenset(PLAIN_TYPES)
_SCALARS_AND_CONTAINERS = _SCALARS | {dict, list}
_STR = frozenset({str})
_DICT = {dict}


def is_plain_json(value: object) -> bool:
    """Whether a value is made only of dict (str keys), list, str, int, float, bool and None."""
    return plain_json_names(value) is not None


_PAIR_FIELDS = ("name", "key", "Name", "Key")


def plain_json_names(value: object) -> set[str] | None:
    """The names in a plain-JSON value that redaction decides, or None when it is not plain JSON.

    Plain JSON is made only of dict (str keys), list, str, int, float, bool and None. The names
    are every dict key, the name of each ``{"name": ..., "value": ...}`` entry and the first
    item of each two-item list whose first item is a string (a header pair): the strings the
    redactor's walk tests with ``is_secret_key``. One walk answers both questions, with set
    operations over item types (C loops) rather than a Python step per item; a list of dicts
    (records) is checked as a whole.
    """
    names: set[str] = set()
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        items: Any
        if kind is dict:
            names.update(item)
            if "value" in item or "Value" in item:
                _pair_name(item, names)
            items = item.values()
            kinds = set(map(type, items))
        elif kind is list:
            items = item
            kinds = set(map(type, items))
            if kinds == _DICT:  # records: every dict's keys and values at once
                names.update(*items)
                if "value" in names or "Value" in names:
                    for entry in items:
                        if "value" in entry or "Value" in entry:
                            _pair_name(entry, names)
                kinds = set(map(type, chain.from_iterable(map(dict.values, items))))
                if kinds <= _SCALARS:
                    continue  # records of scalars (the usual rows): their values need no list of their own
                items = list(chain.from_iterable(map(dict.values, items)))
        elif kind in _SCALARS:
            continue
        else:
            return None
        if kinds <= _SCALARS:
            continue
        if not kinds <= _SCALARS_AND_CONTAINERS:
            return None
        for x in items:
            if type(x) is dict:
                stack.append(x)
            elif type(x) is list:
                stack.append(x)
                if len(x) == 2 and type(x[0]) is str:
                    names.add(x[0])
    return names if _STR.issuperset(map(type, names)) else None


def _pair_name(entry: dict[str, object], names: set[str]) -> None:
    for field in _PAIR_FIELDS:
        name = entry.get(field)
        if type(name) is str:
            names.add(name)
            return


def _items(values: cabc.Collection[object], depth: int, lossy: _Lossy) -> list[Description] | None:
    kinds = set(map(type, values))
    if kinds <= _SCALARS and (int not in kinds or all(v in INT_RANGE for v in values if type(v) is int)):
        return None  # plain items (a tuple of strings, say) need no description each
    descs = [_describe(v, depth + 1, lossy) for v in values]
    return descs if any(d is not None for d in descs) else None


_field_names: dict[type, tuple[str, ...]] = {}


def _fields_of(cls: type) -> tuple[str, ...]:
    names = _field_names.get(cls)
    if names is None:
        names = _field_names[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _describe(value: object, depth: int, lossy: _Lossy) -> Description:
    cls = type(value)
    if cls in PLAIN_TYPES:
        return {"t": "int"} if cls is int and value not in INT_RANGE else None  # kept as its decimal text
    simple = SIMPLE_KINDS.get(cls)  # an exact class, so first: none of them is an Enum or a container
    if simple is not None:
        if cls is _dt.datetime or cls is _dt.time:
            exact = value.isoformat()  # type: ignore[attr-defined]
            if orjson.dumps(value)[1:-1].decode() != exact:
                # orjson writes some of these wrongly (a time's microseconds without their leading
                # zeros, an offset with seconds rounded to ":60"); the JSON stays as it is, so call
                # keys do not change, and the exact text goes beside it.
                return {"t": simple, "x": exact}
        return _SIMPLE_DESCS[cls]
    if depth > MAX_DEPTH:
        lossy.append("nesting deeper than 64")
        return None
    if isinstance(value, enum.Enum):
        _named(cls, lossy)
        return {"t": "enum", "c": class_name(cls)}
    if isinstance(value, list) and cls is list:
        items = _items(value, depth, lossy)
        return None if items is None else {"t": "list", "i": items}
    if isinstance(value, dict) and cls is dict:
        return _describe_dict(value, depth, lossy)
    if isinstance(value, tuple) and cls is tuple:
        return _with_items("tuple", _items(value, depth, lossy))
    if isinstance(value, (set, frozenset)) and cls in (set, frozenset):
        ordered = sorted(value, key=_set_order)
        return _with_items(cls.__name__, _items(ordered, depth, lossy))
    if isinstance(value, PurePath):
        return {"t": "path", "c": class_name(cls)}
    if isinstance(value, BaseException):
        lossy.append(class_name(cls))
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {name: _describe(getattr(value, name), depth + 1, lossy) for name in _fields_of(cls)}
        _named(cls, lossy)
        out: dict[str, Any] = {"t": "dataclass", "c": class_name(cls)}
        kept = {k: d for k, d in fields.items() if d is not None}
        if kept:
            out["f"] = kept
        return out
    if _is_model(value):
        _named(cls, lossy)
        return {"t": "model", "c": class_name(cls)}
    # Subclasses of the plain types, named tuples, other objects: JSON keeps their data, not their type.
    lossy.append(class_name(cls))
    return None


UNNAMED = " (defined inside a function)"


def _named(cls: type, lossy: _Lossy) -> None:
    if "<locals>" in cls.__qualname__:
        lossy.unnamed.append(class_name(cls))


def _set_order(item: object) -> bytes:
    """The order ``to_jsonable`` gives a set's items: by their JSON (so descriptions line up with the array)."""
    return orjson.dumps(to_jsonable(item))


def _with_items(kind: str, items: list[Description] | None) -> Description:
    out: dict[str, Any] = {"t": kind}
    if items is not None:
        out["i"] = items
    return out


def _describe_dict(value: dict[Any, Any], depth: int, lossy: _Lossy) -> Description:
    values: dict[str, Description] = {}
    keys: dict[str, Description] = {}
    for key, item in value.items():
        text = key if type(key) is str else _json_key(key)
        if type(key) is not str:
            keys[text] = _describe(key, depth + 1, lossy) or {"t": _plain_key_kind(key)}
        desc = _describe(item, depth + 1, lossy)
        if desc is not None:
            values[text] = desc
    if not values and not keys:
        return None
    out: dict[str, Any] = {"t": "dict"}
    if values:
        out["v"] = values
    if keys:
        out["k"] = keys
    return out


def _json_key(key: object) -> str:
    text = orjson.loads(orjson.dumps({key: 0}, default=to_jsonable, option=orjson.OPT_NON_STR_KEYS))
    return str(next(iter(text)))


def _plain_key_kind(key: object) -> str:
    if key is None:
        return "none"
    return {bool: "bool", int: "int", float: "float"}.get(type(key), "str")


SIMPLE_KINDS: dict[type, str] = {
    _dt.datetime: "datetime",
    _dt.date: "date",
    _dt.time: "time",
    _dt.timedelta: "timedelta",
    uuid.UUID: "uuid",
    Decimal: "decimal",
    bytes: "bytes",
    bytearray: "bytearray",
}
_SIMPLE_DESCS: dict[type, dict[str, str]] = {cls: {"t": kind} for cls, kind in SIMPLE_KINDS.items()}
"""One description per simple kind, shared: descriptions are only ever dumped, never changed."""


# --- replay side ------------------------------------------------------------------------------


def exception_facts(exc: BaseException) -> tuple[list[JSONValue], dict[str, JSONValue]]:
    """An exception's args and its public attributes, where each is plain JSON (others are left out)."""
    args = [a for a in (to_jsonable(a) for a in exc.args)]
    attrs: dict[str, JSONValue] = {}
    for name, item in getattr(exc, "__dict__", {}).items():
        if name.startswith("_") or not _plain_json(item, 0):
            continue
        attrs[name] = item
    return args, attrs


def _plain_json(value: object, depth: int) -> bool:
    if type(value) in PLAIN_TYPES:
        return True
    if depth > 8:
        return False
    if isinstance(value, list) and type(value) is list:
        return all(_plain_json(v, depth + 1) for v in value)
    if isinstance(value, dict) and type(value) is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    return False
