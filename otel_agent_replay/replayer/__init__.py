"""replayer."""

from __future__ import annotations

from ._ledger import Divergence
from ._replay import replay
from ._session import MODES, ReplaySession

__all__ = ["MODES", "Divergence", "ReplaySession", "replay"]
