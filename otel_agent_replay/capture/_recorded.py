"""A replayed tape's recorded argument texts: what lets a replay key a live call without redacting it again.

A replay keys each live call on its redacted canonical arguments (``capture_args``), as the recording did.
The tape's arguments passed that redaction when they were recorded, and redaction is idempotent on its own
output (``tape._redacted``). So a live call whose canonical text is, character for character, a recorded
call's arguments holds nothing redaction would change: redacting it gives it back, and its key, its span's
arguments and anything a divergence report shows are what the detector's path would give, all of it text the
tape already holds. ``RecordedArgs`` is that set of texts, built on the first call that asks (a replay that
makes no call builds nothing); a text not in it takes the whole redaction path (docs/design.md, "A replay
keys raw first").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

__all__ = ["RecordedArgs"]


class RecordedArgs:
    """The argument texts a tape's own steps recorded (``Step.args_json``), as a set built on first use."""

    __slots__ = ("_lock", "_source", "_texts")

    def __init__(self, source: Callable[[], Iterable[str]]) -> None:
        self._source: Callable[[], Iterable[str]] | None = source
        self._texts: frozenset[str] | None = None
        self._lock = threading.Lock()

    def _build(self) -> frozenset[str]:
        with self._lock:
            if self._texts is None:
                source = self._source
                self._texts = frozenset(source()) if source is not None else frozenset()
                self._source = None  # the tape's steps are not held through this set once it is made
            return self._texts

    def __contains__(self, text: object) -> bool:
        texts = self._texts if self._texts is not None else self._build()
        return text in texts
