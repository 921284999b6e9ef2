"""Time travel: a replay that goes on past its first divergence (``then=``), from edited steps (``edit=``).

``ForkState`` is one replay's fork: whether it has forked, where and why (``Fork``); ``Edits`` are the
recorded steps whose results the user replaced, checked against the tape. The replayer consults both
when it decides a call; the forked run is written to a tape of its own (``fork_tape_for``).
"""

from __future__ import annotations

from ._edits import Edits, edited_result
from ._fork import Fork, ForkState, fork_tape_for

__all__ = ["Edits", "Fork", "ForkState", "edited_result", "fork_tape_for"]
