"""A large tape held still for the garbage collector while it is replayed.

A loaded tape is objects the collector tracks (a ``Step`` each, and what it holds). A replay makes
objects that live on (its spans until they are exported, the calls it keeps for ``view()``), and
every so often those start a full collection, which walks every tracked object of the process:
the larger the tape, the longer each one, so that a hit on a 100,000-step tape cost several times
a hit on a 1,000-step one. While a replay of a tape of at least ``LARGE_TAPE_STEPS`` steps (any
non-empty tape) is active, the objects that existed when it began (the tape among them) are moved to the collector's
permanent generation (``gc.freeze``), which no collection walks; when the last such replay ends
they are handed back (``gc.unfreeze``) and collected as before. Reference counting frees frozen
objects as usual; only a reference cycle among them waits for the end of the replay.
"""

from __future__ import annotations

import gc
from typing import Final

from otel_agent_replay.seal import Counted
from otel_agent_replay.tape import Tape

LARGE_TAPE_STEPS: Final = 1
"""From this many recorded steps on, a replay holds the heap still: every replay of a recorded step. Freezing
and unfreezing are two list splices, and even a small tape's hit pays for collections that walk the
process's older objects (under callgrind, a document hit with its span: 390k instructions with the heap held
still, 409-411k without; bench/README.md "Hit and GET round")."""

held_still = Counted(gc.freeze, gc.unfreeze)
"""Counted over the replays of large tapes: the first freezes, the last unfreezes."""


def is_large(tape: Tape) -> bool:
    """Whether replaying ``tape`` holds the heap still."""
    total = 0
    for run in tape.runs:
        total += len(run.steps)
        if total >= LARGE_TAPE_STEPS:
            return True
    return False
