"""Faithful results: what type a value had when it was recorded, and the value rebuilt at replay.

The tape keeps a result as plain JSON (the safe-serialisation rule of ``_canonical``); beside it a
*type description* (``describe``) says what JSON cannot: that this array was a tuple, this string a
``datetime``, this object a dataclass. At replay ``rebuild`` turns the JSON back into the value, led
first by the tool's return annotation (or ``result_type=``), then by the description.

Tape data never causes an import and never names a callable to run: a class named by a
description is used only when its module is already in ``sys.modules`` and it is a dataclass, a
pydantic model, an ``Enum`` or an exception class, and it is then built by that kind's own
protocol (fields, ``model_validate``, the enum's value, the exception's args).
"""

from __future__ import annotations

import base64
import collections.abc as cabc
import dataclasses
import datetime as _dt
import enum
import sys
import types
import typing
import uuid
from decimal import Decimal
from itertools import chain
from pathlib import PurePath
from typing import Any

import orjson

from ._canonical import JSONValue, to_jsonable

Description = Any
"""A type description: None (plain JSON, as is) or a small JSON object (see ``describe``)."""

_MAX_DEPTH = 64
_PLAIN = (str, int, float, bool, type(None))


def class_name(cls: type) -> str:
    """``module.qualname`` of a class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def loaded_class(name: str) -> type | None:
    """The class ``module.qualname`` when its module is already imported, else None (never imports)."""
    if not name or "<locals>" in name:
        return None
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest module name that is loaded
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        target: Any = module
        for part in parts[cut:]:
            target = getattr(target, part, None)
            if target is None:
                return None
        return target if isinstance(target, type) else None
    return None


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
    if is_plain_json(value):
        return None, []
    lossy = _Lossy()
    try:
        desc = _describe(value, 0, lossy)
        return desc, [*lossy, *(f"{name}{UNNAMED}" for name in dict.fromkeys(lossy.unnamed))]
    except Exception:
        return None, [class_name(type(value))]


_SCALARS = frozenset(_PLAIN)
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
                items = list(chain.from_iterable(map(dict.values, items)))
                kinds = set(map(type, items))
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


def _items(values: cabc.Iterable[object], depth: int, lossy: _Lossy) -> list[Description] | None:
    descs = [_describe(v, depth + 1, lossy) for v in values]
    return descs if any(d is not None for d in descs) else None


def _describe(value: object, depth: int, lossy: _Lossy) -> Description:
    cls = type(value)
    if cls in _PLAIN:
        return None
    if depth > _MAX_DEPTH:
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
    simple = _SIMPLE_KINDS.get(cls)
    if simple is not None:
        if isinstance(value, (_dt.datetime, _dt.time)):
            exact = value.isoformat()
            if orjson.dumps(value)[1:-1].decode() != exact:
                # orjson writes some of these wrongly (a time's microseconds without their leading
                # zeros, an offset with seconds rounded to ":60"); the JSON stays as it is, so call
                # keys do not change, and the exact text goes beside it.
                return {"t": simple, "x": exact}
        return {"t": simple}
    if isinstance(value, PurePath):
        return {"t": "path", "c": class_name(cls)}
    if isinstance(value, BaseException):
        lossy.append(class_name(cls))
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _describe(getattr(value, f.name), depth + 1, lossy) for f in dataclasses.fields(value)}
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


_SIMPLE_KINDS: dict[type, str] = {
    _dt.datetime: "datetime",
    _dt.date: "date",
    _dt.time: "time",
    _dt.timedelta: "timedelta",
    uuid.UUID: "uuid",
    Decimal: "decimal",
    bytes: "bytes",
    bytearray: "bytearray",
}


# --- replay side ------------------------------------------------------------------------------


class RebuildError(Exception):
    """A value did not fit the type it was to be rebuilt as (the caller falls back)."""


def rebuild(value: JSONValue, hint: Any = None, desc: Description = None) -> Any:
    """The recorded JSON ``value`` as the type ``hint`` says, else as ``desc`` recorded; never raises.

    Where the hint says nothing specific (absent, ``Any``, ``object``, an ambiguous union) the
    description recorded at the same place decides; where both are silent the JSON is returned.
    """
    if desc is None and json_only(hint):
        return value  # plain JSON, and the hint asks for nothing JSON does not already give
    try:
        return _rebuild(value, hint, desc, 0)
    except Exception:
        try:
            return _rebuild(value, None, desc, 0)
        except Exception:
            return value


_NONE_TYPE = type(None)
_JSON_ORIGINS = (list, dict, cabc.Sequence, cabc.MutableSequence, cabc.Mapping, cabc.MutableMapping, typing.Union)
_json_only_cache: dict[Any, bool] = {}


def json_only(hint: Any) -> bool:
    """Whether a type hint asks only for what JSON data already is (``dict[str, Any]``, ``list[int]`` …)."""
    try:
        known = _json_only_cache.get(hint)
    except TypeError:  # an unhashable hint
        return False
    if known is None:
        known = _json_only_cache[hint] = _is_json_only(hint, 0)
    return known


def _is_json_only(hint: Any, depth: int) -> bool:
    if depth > 8:
        return False
    if hint is None or hint is Any or hint is object or hint in _PLAIN:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return True
    if hasattr(types, "UnionType") and origin is types.UnionType:
        origin = typing.Union
    if origin in _JSON_ORIGINS:
        args = typing.get_args(hint)
        if origin in (dict, cabc.Mapping, cabc.MutableMapping) and args and args[0] is not str:
            return False
        return all(_is_json_only(a, depth + 1) for a in args)
    return hint in (list, dict)


def _rebuild(value: Any, hint: Any, desc: Description, depth: int) -> Any:
    if depth > _MAX_DEPTH or (desc is None and json_only(hint)):
        return value
    if hint is None or hint is Any or hint is object or isinstance(hint, (str, typing.ForwardRef)):
        return _by_desc(value, desc, depth)
    origin = typing.get_origin(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return _by_union(value, typing.get_args(hint), desc, depth)
    if origin is typing.Literal or hint is _NONE_TYPE:
        return value
    if origin is typing.Annotated:
        return _rebuild(value, typing.get_args(hint)[0], desc, depth)
    if origin is not None:
        return _by_generic(value, origin, typing.get_args(hint), desc, depth)
    if isinstance(hint, typing.TypeVar) or not isinstance(hint, type):
        return _by_desc(value, desc, depth)
    return _by_class(value, hint, desc, depth)


def _sub(desc: Description, key: str, index: Any) -> Description:
    if not isinstance(desc, dict):
        return None
    part = desc.get(key)
    if isinstance(part, list) and isinstance(index, int):
        return part[index] if index < len(part) else None
    if isinstance(part, dict):
        return part.get(index)
    return None


def _by_union(value: Any, args: tuple[Any, ...], desc: Description, depth: int) -> Any:
    options = [a for a in args if a is not _NONE_TYPE]
    if value is None and len(options) < len(args):
        return None
    if len(options) == 1:
        return _rebuild(value, options[0], desc, depth)
    if desc is not None:  # the recorded type decides between the options
        return _by_desc(value, desc, depth)
    if any(a is type(value) for a in options):
        return value
    fits = [a for a in options if _shape_fits(value, a)]
    if len(fits) == 1:
        return _rebuild(value, fits[0], None, depth)
    return value  # ambiguous: the JSON as it is


def _shape_fits(value: Any, hint: Any) -> bool:
    target = typing.get_origin(hint) or hint
    if not isinstance(target, type):
        return False
    if isinstance(value, list):
        return issubclass(target, (list, tuple, set, frozenset))
    if isinstance(value, dict):
        return issubclass(target, dict) or dataclasses.is_dataclass(target) or hasattr(target, "model_validate")
    if isinstance(value, str):
        return issubclass(target, (str, _dt.date, _dt.time, uuid.UUID, Decimal, PurePath, enum.Enum))
    return isinstance(value, target)


def _by_generic(value: Any, origin: Any, args: tuple[Any, ...], desc: Description, depth: int) -> Any:
    d = depth + 1
    if origin in (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection) and isinstance(
        value, list
    ):
        item = args[0] if args else None
        return [_rebuild(v, item, _sub(desc, "i", n), d) for n, v in enumerate(value)]
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_rebuild(v, args[0], _sub(desc, "i", n), d) for n, v in enumerate(value))
        if args and args != ((),):
            if len(args) != len(value):
                raise RebuildError(f"{len(value)} items for a tuple of {len(args)}")
            return tuple(
                _rebuild(v, a, _sub(desc, "i", n), d) for n, (v, a) in enumerate(zip(value, args, strict=True))
            )
        return tuple(value)
    if origin in (set, frozenset, cabc.Set, cabc.MutableSet) and isinstance(value, list):
        item = args[0] if args else None
        built = [_rebuild(v, item, _sub(desc, "i", n), d) for n, v in enumerate(value)]
        return frozenset(built) if origin is frozenset else set(built)
    if origin in (dict, cabc.Mapping, cabc.MutableMapping) and isinstance(value, dict):
        key_hint, item_hint = (args[0], args[1]) if len(args) == 2 else (None, None)
        return {
            _rebuild_key(k, key_hint, _sub(desc, "k", k)): _rebuild(v, item_hint, _sub(desc, "v", k), d)
            for k, v in value.items()
        }
    if origin is type:
        return value
    if isinstance(origin, type):
        return _by_class(value, origin, desc, depth)
    return _by_desc(value, desc, depth)


def _rebuild_key(key: str, hint: Any, desc: Description) -> Any:
    if hint is None or hint is Any:
        return _by_desc(key, desc, 0) if desc is not None else key
    if hint is int:
        return int(key)
    if hint is float:
        return float(key)
    return _rebuild(key, hint, desc, 0)


def _by_class(value: Any, cls: type, desc: Description, depth: int) -> Any:
    if cls is bool or cls is str:
        return value
    if cls is int:
        return value
    if cls is float:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if issubclass(cls, enum.Enum):
        return cls(value)
    if cls in (bytes, bytearray) or issubclass(cls, (bytes, bytearray)):
        return cls(_bytes(value))
    if issubclass(cls, (_dt.datetime, _dt.date, _dt.time)):
        return cls.fromisoformat(_exact(value, desc))
    if issubclass(cls, _dt.timedelta):
        return cls(seconds=value)
    if issubclass(cls, (uuid.UUID, Decimal, PurePath)):
        if issubclass(cls, PurePath) and isinstance(desc, dict) and desc.get("t") == "path":
            recorded = loaded_class(str(desc.get("c", "")))
            if recorded is not None and issubclass(recorded, cls):
                return recorded(value)
        return cls(value)
    if dataclasses.is_dataclass(cls):
        return _dataclass(value, cls, desc, depth)
    if callable(getattr(cls, "model_validate", None)):
        return cls.model_validate(value)  # type: ignore[attr-defined]
    if cls in (list, tuple, set, frozenset, dict):
        return _by_generic(value, cls, (), desc, depth)
    return _by_desc(value, desc, depth)


def _exact(value: Any, desc: Description) -> Any:
    """The exact ISO text recorded beside a datetime or time that orjson writes wrongly, else the value."""
    if isinstance(desc, dict) and isinstance(desc.get("x"), str):
        return desc["x"]
    return value


def _bytes(value: Any) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("$bytes"), str):
        return base64.b64decode(value["$bytes"])
    raise RebuildError("not recorded bytes")


def _dataclass(value: Any, cls: type, desc: Description, depth: int) -> Any:
    if not isinstance(value, dict):
        raise RebuildError(f"{cls.__qualname__} from {type(value).__name__}")
    hints = _field_hints(cls)
    kwargs: dict[str, Any] = {}
    late: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in value:
            continue
        built = _rebuild(value[f.name], hints.get(f.name), _sub(desc, "f", f.name), depth + 1)
        (kwargs if f.init else late)[f.name] = built
    obj = cls(**kwargs)
    for name, built in late.items():
        object.__setattr__(obj, name, built)
    return obj


_hints_cache: dict[type, dict[str, Any]] = {}


def _field_hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved field types, once per class (``get_type_hints`` is slow)."""
    hints = _hints_cache.get(cls)
    if hints is None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:
            hints = {}
        _hints_cache[cls] = hints
    return hints


def _by_desc(value: Any, desc: Description, depth: int) -> Any:
    """The value as its recorded description says (a class only when loaded and of a safe kind)."""
    if not isinstance(desc, dict):
        return value
    kind = desc.get("t")
    d = depth + 1
    if kind == "list" and isinstance(value, list):
        return [_by_desc(v, _sub(desc, "i", n), d) for n, v in enumerate(value)]
    if kind in ("tuple", "set", "frozenset") and isinstance(value, list):
        built = [_by_desc(v, _sub(desc, "i", n), d) for n, v in enumerate(value)]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[kind](built)
    if kind == "dict" and isinstance(value, dict):
        return {_by_desc(k, _sub(desc, "k", k), d): _by_desc(v, _sub(desc, "v", k), d) for k, v in value.items()}
    if kind in _SIMPLE_BY_NAME:
        try:
            return _by_class(_exact(value, desc), _SIMPLE_BY_NAME[kind], None, depth)
        except Exception:  # a redacted value ("[REDACTED]") stays as the tape has it; the rest is rebuilt
            return value
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "bool":
        return value == "true" if isinstance(value, str) else bool(value)
    if kind == "none":
        return None
    cls = loaded_class(str(desc.get("c", "")))
    if cls is None:
        return value
    if kind == "path" and issubclass(cls, PurePath):
        return cls(value)
    if kind == "enum" and issubclass(cls, enum.Enum):
        return cls(value)
    if kind == "dataclass" and dataclasses.is_dataclass(cls):
        return _dataclass(value, cls, desc, depth)
    if kind == "model" and callable(getattr(cls, "model_validate", None)):
        return cls.model_validate(value)  # type: ignore[attr-defined]
    return value


_SIMPLE_BY_NAME: dict[str, type] = {name: cls for cls, name in _SIMPLE_KINDS.items()}


# --- exceptions --------------------------------------------------------------------------------


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
    if type(value) in _PLAIN:
        return True
    if depth > 8:
        return False
    if isinstance(value, list) and type(value) is list:
        return all(_plain_json(v, depth + 1) for v in value)
    if isinstance(value, dict) and type(value) is dict:
        return all(type(k) is str and _plain_json(v, depth + 1) for k, v in value.items())
    return False


def rebuild_exception_as(cls: type[BaseException], args: list[Any], attrs: dict[str, Any]) -> BaseException:
    """An instance of ``cls`` with these args and attributes (its ``__init__`` when it takes the args)."""
    try:
        exc = cls(*args)
    except Exception:
        exc = cls.__new__(cls)
        BaseException.__init__(exc, *args)
    if list(exc.args) != list(args):
        exc.args = tuple(args)
    for name, item in attrs.items():
        try:
            setattr(exc, name, item)
        except Exception:
            continue
    return exc
