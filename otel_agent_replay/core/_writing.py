"""Taking a tape's one-writer lock for a block that writes it, with the block's own words.

A block that writes a tape (``record``, and the replay modes that record or append) holds the
tape's lock (``core.TapeLock``) from its start to its end. A second process that wants to write the
same tape waits, and says once, with a ``TapeWarning``, for whom; when the wait reaches
``lock_timeout`` it fails with a ``TapeError`` naming the holder and the advice its mode calls for.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass

from ._errors import ConfigurationError, TapeWarning
from ._lock import LockHolder, TapeLock

_log = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT = 600.0
"""How long a writer waits for another process's write of the same tape (seconds)."""


@dataclass(frozen=True)
class Writing:
    """What a block that takes the lock does, in words for its messages."""

    what: str
    """The block, as the user wrote it: ``record()``, ``replay(mode='once')``."""
    advice: str
    """What to do when the wait runs out (after the holder's name)."""


def lock_timeout_seconds(value: object, where: str) -> float:
    """``lock_timeout=`` checked: seconds, 0 (do not wait) or more."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigurationError(f"{where}(lock_timeout={value!r}): give seconds to wait for another writer, 0 or more")
    return float(value)


def hold_tape(tape: str | os.PathLike[str], writing: Writing, timeout: float) -> TapeLock:
    """Take ``tape``'s lock for ``writing`` (waiting at most ``timeout`` seconds); the caller releases it."""
    lock = TapeLock(tape)

    def waiting(holder: LockHolder | None) -> None:
        who = holder.describe() if holder is not None else "another process"
        message = (
            f"{tape} is being written by {who}; {writing.what} waits for it to finish (at most {timeout:g}s): "
            "a tape has one writer at a time"
        )
        _log.warning("%s", message)
        warnings.warn(message, TapeWarning, stacklevel=5)

    def busy(who: str) -> str:
        return f"{who} still writes it after {timeout:g}s, and a tape has one writer at a time. {writing.advice}"

    lock.acquire(timeout, waiting=waiting, busy=busy)
    return lock


__all__ = ["DEFAULT_LOCK_TIMEOUT", "Writing", "hold_tape", "lock_timeout_seconds"]
