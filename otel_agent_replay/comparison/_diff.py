"""Field-level differences between two JSON values: ``max_words: 120 → 80``.

Used by replay messages (drift, nearest recordings) and by run comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "(absent)"})()
"""Stands for a field one side does not have."""

_SHORT = 60


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: where (a JSON path like ``items[2].name``) and both values."""

    path: str
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"{self.path or '(value)'}: {short(self.left)} → {short(self.right)}"


def short(value: Any, limit: int = _SHORT) -> str:
    """A value as compact JSON, cut to ``limit`` characters."""
    if value is ABSENT:
        return "(absent)"
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def json_changes(left: Any, right: Any, path: str = "") -> list[Change]:
    """Every leaf-level difference between two JSON values, in a stable order.

    Objects are compared key by key (a key on one side only is a change from or to
    ``ABSENT``); arrays index by index; anything else by value and type, so ``3`` and
    ``"3"`` differ, and so do ``True`` and ``1``.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        changes: list[Change] = []
        for key in sorted(left.keys() | right.keys()):
            changes.extend(json_changes(left.get(key, ABSENT), right.get(key, ABSENT), _join(path, key)))
        return changes
    if isinstance(left, list) and isinstance(right, list):
        changes = []
        for i in range(max(len(left), len(right))):
            a = left[i] if i < len(left) else ABSENT
            b = right[i] if i < len(right) else ABSENT
            changes.extend(json_changes(a, b, f"{path}[{i}]"))
        return changes
    if type(left) is type(right) and left == right:
        return []
    return [Change(path, left, right)]


def describe(changes: list[Change], limit: int = 8) -> str:
    """Changes as ``a: 1 → 2; b: x → y`` (at most ``limit``, then a count)."""
    shown = "; ".join(str(c) for c in changes[:limit])
    if len(changes) > limit:
        shown += f"; and {len(changes) - limit} more"
    return shown or "no difference"
