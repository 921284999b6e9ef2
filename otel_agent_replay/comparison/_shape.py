"""The shape of JSON values: keys, value types and list item shapes, merged over many values.

Conformance asks "does the real tool still answer in the shape the fixtures assume?": the shape
is inferred from every recorded result of a tool, then a live result is compared with it. A
shape says which keys an object always has (``required``) and which it sometimes has, which
JSON types a value took, and the merged shape of a list's items.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_OBJECT = "object"
_LIST = "array"
_NUMBER = "number"
_INTEGER = "integer"


def json_type(value: Any) -> str:
    """The JSON type name of a value: object, array, string, integer, number, boolean or null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return _INTEGER
    if isinstance(value, float):
        return _NUMBER
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return _OBJECT
    if isinstance(value, list | tuple):
        return _LIST
    return type(value).__name__


@dataclass
class Shape:
    """What a JSON path held across the values seen: its types, an object's keys, a list's items."""

    types: set[str] = field(default_factory=set)
    seen: int = 0
    """How many values (objects, for ``key_counts``) were merged."""
    objects: int = 0
    keys: dict[str, Shape] = field(default_factory=dict)
    key_counts: dict[str, int] = field(default_factory=dict)
    items: Shape | None = None

    def add(self, value: Any) -> Shape:
        """Merge one value into this shape (returns self)."""
        self.seen += 1
        kind = json_type(value)
        self.types.add(kind)
        if kind == _OBJECT:
            self.objects += 1
            for key, item in value.items():
                self.keys.setdefault(key, Shape()).add(item)
                self.key_counts[key] = self.key_counts.get(key, 0) + 1
        elif kind == _LIST:
            if self.items is None:
                self.items = Shape()
            for item in value:
                self.items.add(item)
        return self

    @property
    def required(self) -> frozenset[str]:
        """The keys every object seen here had."""
        return frozenset(k for k, n in self.key_counts.items() if n == self.objects)

    def to_json(self) -> dict[str, Any]:
        """The shape as plain JSON data (for ``--json``)."""
        out: dict[str, Any] = {"types": sorted(self.types)}
        if self.keys:
            out["keys"] = {k: s.to_json() for k, s in sorted(self.keys.items())}
            out["required"] = sorted(self.required)
        if self.items is not None and self.items.seen:
            out["items"] = self.items.to_json()
        return out


def shape_of(values: Iterable[Any]) -> Shape:
    """The merged shape of many JSON values (all recorded results of one tool)."""
    shape = Shape()
    for value in values:
        shape.add(value)
    return shape


@dataclass(frozen=True)
class ShapeChange:
    """One way a value does not fit a shape: a ``missing_key``, a ``new_key`` or a ``type_change``."""

    kind: str
    path: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        if self.kind == "missing_key":
            return f"{self.path}: missing (every recorded result has it)"
        if self.kind == "new_key":
            return f"{self.path}: new key (no recorded result has it), a {self.actual}"
        return f"{self.path}: {self.actual}, recorded as {' or '.join(self.expected)}"


def _fits(kind: str, types: set[str]) -> bool:
    # An integer where numbers were recorded is still a number (JSON does not tell 1 from 1.0 apart reliably).
    return kind in types or (kind == _INTEGER and _NUMBER in types)


def shape_changes(shape: Shape, value: Any, path: str = "result") -> list[ShapeChange]:
    """How ``value`` does not fit ``shape``, path by path (empty when it fits)."""
    kind = json_type(value)
    if not shape.types:
        return []
    if not _fits(kind, shape.types):
        return [ShapeChange("type_change", path, sorted(shape.types), kind)]
    out: list[ShapeChange] = []
    if kind == _OBJECT and shape.objects:
        for key in sorted(shape.required - value.keys()):
            out.append(ShapeChange("missing_key", f"{path}.{key}", sorted(shape.keys[key].types), None))
        for key in sorted(value):
            sub = shape.keys.get(key)
            if sub is None:
                out.append(ShapeChange("new_key", f"{path}.{key}", None, json_type(value[key])))
            else:
                out.extend(shape_changes(sub, value[key], f"{path}.{key}"))
    elif kind == _LIST and shape.items is not None and shape.items.seen:
        for i, item in enumerate(value):
            changes = shape_changes(shape.items, item, f"{path}[*]")
            out.extend(c for c in changes if c not in out)
            if i >= 50:  # enough items to see a change of shape; a long list would repeat it
                break
    return out


__all__ = ["Shape", "ShapeChange", "json_type", "shape_changes", "shape_of"]
