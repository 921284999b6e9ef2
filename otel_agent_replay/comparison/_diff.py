"""Field-level differences between two JSON values: ``max_words: 120 → 80``.

Used by replay messages (drift, nearest recordings) and by run comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from otel_agent_replay.core import DivergenceKind

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "(absent)"})()
"""Stands for a field one side does not have."""

_SHORT = 60


@dataclass(frozen=True, slots=True)
class Difference:
    """One difference between two values, two steps or two runs: where, both sides, and its kind.

    ``path`` is a JSON path like ``args.items[2].name`` ("" for the whole value); ``step`` the
    step_id it is about ("" for run-level differences, and for plain value differences).
    """

    path: str
    left: Any
    right: Any
    kind: DivergenceKind = DivergenceKind.ARGS
    step: str = ""

    def brief(self) -> str:
        """``path: left → right``, as drift messages show it."""
        return f"{self.path or '(value)'}: {short(self.left)} → {short(self.right)}"

    def __str__(self) -> str:
        where = f"{self.step} " if self.step else ""
        at = f"{self.path}: " if self.path else ""
        return f"[{self.kind.value}] {where}{at}{short(self.left)} → {short(self.right)}"


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


def json_changes(left: Any, right: Any, path: str = "") -> list[Difference]:
    """Every leaf-level difference between two JSON values, in a stable order.

    Objects are compared key by key (a key on one side only is a change from or to
    ``ABSENT``); arrays index by index; anything else by value and type, so ``3`` and
    ``"3"`` differ, and so do ``True`` and ``1``.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        changes: list[Difference] = []
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
    return [Difference(path, left, right)]


def describe(changes: list[Difference], limit: int = 8) -> str:
    """Changes as ``a: 1 → 2; b: x → y`` (at most ``limit``, then a count)."""
    shown = "; ".join(c.brief() for c in changes[:limit])
    if len(changes) > limit:
        shown += f"; and {len(changes) - limit} more"
    return shown or "no difference"
