"""Faithful results: the value rebuilt at replay from its JSON and its type description.

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
from pathlib import PurePath
from typing import Any

from ._describe import MAX_DEPTH, PLAIN_TYPES, SIMPLE_KINDS, Description


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


class RebuildError(Exception):
    """A value did not fit the type it was to be rebuilt as (the caller falls back)."""


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
    if hint is None or hint is Any or hint is object or hint in PLAIN_TYPES:
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
    if depth > MAX_DEPTH or (desc is None and json_only(hint)):
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
        return recorded_int(value, desc)
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


def recorded_int(value: Any, desc: Description) -> Any:
    """An integer beyond 64 bits, which the tape keeps as its decimal text (its description says "int")."""
    if type(value) is str and isinstance(desc, dict) and desc.get("t") == "int":
        return int(value)
    return value


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


_SIMPLE_BY_NAME: dict[str, type] = {name: cls for cls, name in SIMPLE_KINDS.items()}


# --- exceptions --------------------------------------------------------------------------------


def rebuild_exception_as(
    cls: type[BaseException], args: list[Any], attrs: dict[str, Any], left_off: list[str] | None = None
) -> BaseException:
    """An instance of ``cls`` with these args and attributes (its ``__init__`` when it takes the args).

    An attribute the class does not let be set (a read-only property, ``__slots__``) is left off, and its
    name and why go to ``left_off`` (the caller says so)."""
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
        except Exception as why:
            if left_off is not None:
                left_off.append(f"{name} ({type(why).__name__}: {why})")
    return exc
