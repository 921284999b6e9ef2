"""The replayer: ``replay(...)`` serves every decorated call from a tape; its session, options and report."""

from __future__ import annotations

from ._ledger import Divergence, ReplayStats
from ._options import ReplayOptions
from ._replay import replay
from ._session import ReplaySession

__all__ = ["Divergence", "ReplayOptions", "ReplaySession", "ReplayStats", "replay"]
