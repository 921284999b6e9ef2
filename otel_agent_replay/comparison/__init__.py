"""comparison."""

from __future__ import annotations

from ._compare import STRICT, Comparison, Policy, compare
from ._diff import Change, describe, json_changes, short
from ._views import ObservedCall, RunView

__all__ = [
    "STRICT",
    "Change",
    "Comparison",
    "ObservedCall",
    "Policy",
    "RunView",
    "compare",
    "describe",
    "json_changes",
    "short",
]
