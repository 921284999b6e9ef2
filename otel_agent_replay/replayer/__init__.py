"""The replayer: ``replay(...)`` serves every decorated call from a tape; its session, options and report."""

from __future__ import annotations

from ._conform import (
    CHANGED,
    ERROR,
    OK,
    REFUSED,
    SKIPPED,
    Conformance,
    ToolConformance,
    conform,
    load_tools,
    tools_from,
)
from ._ledger import Divergence, ReplayStats
from ._messages import API_HINTS, Hints
from ._options import ReplayOptions
from ._replay import replay
from ._session import ReplaySession

__all__ = [
    "API_HINTS",
    "CHANGED",
    "ERROR",
    "OK",
    "REFUSED",
    "SKIPPED",
    "Conformance",
    "Divergence",
    "Hints",
    "ReplayOptions",
    "ReplaySession",
    "ReplayStats",
    "ToolConformance",
    "conform",
    "load_tools",
    "replay",
    "tools_from",
]
