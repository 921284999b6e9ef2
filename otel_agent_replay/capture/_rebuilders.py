"""Rebuilders compiled once per type hint: ``rebuild``'s dispatch decided once, not once per value.

A replayed result is rebuilt on every hit, and a hint such as ``list[Row]`` asks the generic walk
(``_rebuild``) the same questions for every row: which origin, which kind of class, which fields
with which hints. A *builder* is those answers kept in closures over the hint's parts. It gives
exactly what the generic walk gives: where a value is not the shape the hint expects, or for a
hint it does not specialise (unions, ``Annotated``, forward references, type variables, paths,
containers other than lists, ``tuple[X, ...]`` and ``dict[str, X]``), it hands the value to the
generic walk. Builders are cached by hint (bounded); an unhashable hint takes the generic walk.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime as _dt
import enum
import typing
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import PurePath
from typing import Any

from ._canonical import JSONValue
from ._describe import MAX_DEPTH, Description
from ._rebuild import RebuildError, _bytes, _exact, _field_hints, _rebuild, _rebuild_key, json_only, recorded_int

Builder = Callable[[Any, Description, int], Any]
"""``(value, desc, depth) -> rebuilt``: what ``_rebuild(value, hint, desc, depth)`` returns, for one hint."""

_CACHE_SIZE = 1024
_cache: dict[Any, Builder] = {}
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)


def rebuild(value: JSONValue, hint: Any = None, desc: Description = None) -> Any:
    """The recorded JSON ``value`` as the type ``hint`` says, else as ``desc`` recorded; never raises.

    Where the hint says nothing specific (absent, ``Any``, ``object``, an ambiguous union) the
    description recorded at the same place decides; where both are silent the JSON is returned.
    """
    if desc is None and json_only(hint):
        return value  # plain JSON, and the hint asks for nothing JSON does not already give
    try:
        return builder_for(hint)(value, desc, 0)
    except Exception:
        try:
            return _rebuild(value, None, desc, 0)
        except Exception:
            return value


def builder_for(hint: Any) -> Builder:
    """The builder of ``hint``, compiled at its first use."""
    try:
        found = _cache.get(hint)
    except TypeError:  # an unhashable hint
        return _generic(hint)
    if found is None:
        if len(_cache) >= _CACHE_SIZE:
            _cache.clear()
        found = _cache[hint] = _compile(hint)
    return found


def _generic(hint: Any) -> Builder:
    def build(value: Any, desc: Description, depth: int) -> Any:
        return _rebuild(value, hint, desc, depth)

    return build


def _compile(hint: Any) -> Builder:
    generic = _generic(hint)
    if json_only(hint):

        def plain(value: Any, desc: Description, depth: int) -> Any:
            return value if desc is None or depth > MAX_DEPTH else generic(value, desc, depth)

        return plain
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in _SEQUENCES:
        return _items(generic, args[0] if args else None, list)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _items(generic, args[0], tuple)
    if origin is dict and len(args) == 2 and args[0] is str:
        return _str_dict(generic, args[1])
    if origin is None and isinstance(hint, type):
        return _class(hint, generic)
    return generic


def _parts(desc: Description, key: str, kind: type) -> Any:
    """``desc[key]`` when it is a ``kind`` (what ``_sub`` would index), else None."""
    if type(desc) is not dict:
        return None
    part = desc.get(key)
    return part if type(part) is kind else None


def _items(generic: Builder, item_hint: Any, make: type) -> Builder:
    item: Builder | None = None

    def build(value: Any, desc: Description, depth: int) -> Any:
        nonlocal item
        if depth > MAX_DEPTH or not isinstance(value, list):
            return generic(value, desc, depth)
        if item is None:
            item = builder_for(item_hint)
        d = depth + 1
        subs = _parts(desc, "i", list)
        if subs is None:
            built = [item(v, None, d) for v in value]
        else:
            n_subs = len(subs)
            built = [item(v, subs[n] if n < n_subs else None, d) for n, v in enumerate(value)]
        return built if make is list else make(built)

    return build


def _str_dict(generic: Builder, value_hint: Any) -> Builder:
    item: Builder | None = None

    def build(value: Any, desc: Description, depth: int) -> Any:
        nonlocal item
        if depth > MAX_DEPTH or not isinstance(value, dict):
            return generic(value, desc, depth)
        if item is None:
            item = builder_for(value_hint)
        d = depth + 1
        keys = _parts(desc, "k", dict)
        subs = _parts(desc, "v", dict)
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key_desc = None if keys is None else keys.get(k)
            key = k if key_desc is None else _rebuild_key(k, str, key_desc)
            out[key] = item(v, None if subs is None else subs.get(k), d)
        return out

    return build


def _class(cls: type, generic: Builder) -> Builder:
    """``_by_class``'s choice for ``cls``, made once (the same order of questions)."""
    if cls is bool or cls is str:
        return _guarded(generic, lambda value, desc, depth: value)
    if cls is int:
        return _guarded(generic, lambda value, desc, depth: recorded_int(value, desc))
    if cls is float:
        return _guarded(
            generic,
            lambda value, desc, depth: (
                float(value) if isinstance(value, int) and not isinstance(value, bool) else value
            ),
        )
    if issubclass(cls, enum.Enum):
        return _guarded(generic, lambda value, desc, depth: cls(value))
    if cls in (bytes, bytearray) or issubclass(cls, (bytes, bytearray)):
        return _guarded(generic, lambda value, desc, depth: cls(_bytes(value)))
    if issubclass(cls, (_dt.datetime, _dt.date, _dt.time)):
        parse = cls.fromisoformat
        return _guarded(generic, lambda value, desc, depth: parse(_exact(value, desc)))
    if issubclass(cls, _dt.timedelta):
        return _guarded(generic, lambda value, desc, depth: cls(seconds=value))
    if issubclass(cls, PurePath):
        return generic  # the recorded subclass may decide
    if issubclass(cls, (uuid.UUID, Decimal)):
        return _guarded(generic, lambda value, desc, depth: cls(value))
    if dataclasses.is_dataclass(cls):
        return _dataclass(cls, generic)
    validate = getattr(cls, "model_validate", None)
    if callable(validate):
        return _guarded(generic, lambda value, desc, depth: validate(value))
    return generic


def _guarded(generic: Builder, build: Builder) -> Builder:
    def guarded(value: Any, desc: Description, depth: int) -> Any:
        if depth > MAX_DEPTH:
            return value
        return build(value, desc, depth)

    return guarded


def _dataclass(cls: type, generic: Builder) -> Builder:
    fields: list[tuple[str, bool, Builder]] | None = None  # compiled at the first row: a class may nest itself

    def build(value: Any, desc: Description, depth: int) -> Any:
        nonlocal fields
        if depth > MAX_DEPTH:
            return value
        if not isinstance(value, dict):
            raise RebuildError(f"{cls.__qualname__} from {type(value).__name__}")
        if fields is None:
            hints = _field_hints(cls)
            fields = [(f.name, f.init, builder_for(hints.get(f.name))) for f in dataclasses.fields(cls)]
        subs = _parts(desc, "f", dict)
        d = depth + 1
        kwargs: dict[str, Any] = {}
        late: dict[str, Any] = {}
        for name, init, field_builder in fields:
            if name not in value:
                continue
            built = field_builder(value[name], None if subs is None else subs.get(name), d)
            (kwargs if init else late)[name] = built
        obj = cls(**kwargs)
        for name, built in late.items():
            object.__setattr__(obj, name, built)
        return obj

    return build
