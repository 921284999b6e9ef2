"""What a replay puts in place for as long as at least one replay needs it: the socket guard's checks
(``_network``), the process watch (``_children``), the deferred trust stores (``_trust``).

Replays nest and run concurrently, so each of those is counted under a lock: the first ``enter`` puts
it in place, the last ``exit`` takes it away, and every ``enter`` needs one ``exit``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Counted:
    """``put`` on the first ``enter``, ``take`` on the matching last ``exit`` (thread-safe)."""

    def __init__(self, put: Callable[[], None], take: Callable[[], None]) -> None:
        self._put = put
        self._take = take
        self._lock = threading.Lock()
        self._count = 0

    def enter(self) -> None:
        """Count one more user; the first puts the thing in place."""
        with self._lock:
            self._count += 1
            if self._count == 1:
                self._put()

    def exit(self) -> None:
        """Count one user less; the last takes the thing away."""
        with self._lock:
            self._count -= 1
            if self._count > 0:
                return
            self._count = 0
            self._take()

    def active(self) -> bool:
        """Whether the thing is in place now."""
        with self._lock:
            return self._count > 0
