"""The recorder: ``record(path)`` appends the runs started inside it to a tape, losslessly."""

from __future__ import annotations

from otel_agent_replay.core import DEFAULT_LOCK_TIMEOUT, Writing, hold_tape, lock_timeout_seconds

from ._record import record
from ._routing import Recording

__all__ = ["DEFAULT_LOCK_TIMEOUT", "Recording", "Writing", "hold_tape", "lock_timeout_seconds", "record"]
