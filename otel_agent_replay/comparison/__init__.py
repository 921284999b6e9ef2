"""Comparison and views: ``compare(a, b)`` with its ``Policy`` and ``Difference`` entries, ``RunView`` assertions.

Also the field-level JSON differences that replay messages show.
"""

from __future__ import annotations

from ._compare import STRICT, Comparison, Policy, compare
from ._diff import Difference, describe, json_changes, short
from ._shape import Shape, ShapeChange, json_type, shape_changes, shape_of
from ._views import ObservedCall, RunView

__all__ = [
    "STRICT",
    "Comparison",
    "Difference",
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
