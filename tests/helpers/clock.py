"""A virtual clock for tests of pacing: ``time.monotonic_ns`` reads it, ``time.sleep`` and ``asyncio.sleep``
move it on at once and note what was asked. A paced replay's chunks then come at exactly their recorded
offsets on the clock, and one that is not paced never sleeps, whatever the machine's load: no test
measures the wall clock (the project's rule). ``time.monotonic`` is left alone (event loops read it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

_START_NS = 1_000_000_000_000


class VirtualClock:
    """Nanoseconds that pass only when something sleeps; every sleep asked for, in seconds."""

    def __init__(self) -> None:
        self.now_ns = _START_NS
        self.sleeps: list[float] = []

    def seconds(self) -> float:
        """Seconds since the clock was installed."""
        return (self.now_ns - _START_NS) / 1e9

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds > 0:
            self.now_ns += round(seconds * 1e9)


@contextmanager
def virtual_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[VirtualClock]:
    """Install a ``VirtualClock`` for the block (``time.monotonic_ns``, ``time.sleep``, ``asyncio.sleep``)."""
    clock = VirtualClock()
    real_async_sleep = asyncio.sleep

    async def async_sleep(delay: float, result: Any = None) -> Any:
        if delay > 0:
            clock.sleep(delay)
        return await real_async_sleep(0, result)

    with monkeypatch.context() as patch:
        patch.setattr(time, "monotonic_ns", lambda: clock.now_ns)
        patch.setattr(time, "sleep", clock.sleep)
        patch.setattr(asyncio, "sleep", async_sleep)
        yield clock
