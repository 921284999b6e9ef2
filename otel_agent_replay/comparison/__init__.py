"""Comparison and views: ``compare(a, b)`` with its ``Policy``, its ``Difference`` entries and the same
differences as causes with their consequences (``Cause``, ``Consequence``; a fork's lineage: ``Forked``),
``RunView`` assertions.

Also the field-level JSON differences that replay messages show.
"""

from __future__ import annotations

from ._causes import Cause, Consequence
from ._compare import STRICT, Comparison, Forked, Policy, compare
from ._diff import Difference, describe, json_changes, short
from ._shape import Shape, ShapeChange, json_type, shape_changes, shape_of
from ._views import ObservedCall, RunView

__all__ = [
    "STRICT",
    "Cause",
    "Comparison",
    "Consequence",
    "Difference",
    "Forked",
    "ObservedCall",
    "Policy",
    "RunView",
    "Shape",
    "ShapeChange",
    "compare",
    "describe",
    "json_changes",
    "json_type",
    "shape_changes",
    "shape_of",
    "short",
]
