"""Appending whole lines to a shared file, safely across threads and processes.

Each batch is written with ``O_APPEND`` while holding an exclusive ``flock`` on the
file itself, so lines from several processes never interleave. Before an append the
file is made to end in a newline: a torn last line (left by a process killed
mid-write) is cut off, so new lines never glue onto it, while a complete last line
that only lacks its newline (decided by parsing it as strict JSON) gets one. Waiting
for the lock is bounded: a writer that cannot get it in time reports failure instead
of blocking the application.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import orjson


def _is_whole_line(tail: bytes) -> bool:
    """Whether a last line without its newline is complete: one strict JSON object (a torn line never is)."""
    try:
        return isinstance(orjson.loads(tail), dict)
    except orjson.JSONDecodeError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class LockTimeout(OSError):
    """The file lock was not obtained in time."""


class AppendWriter:
    """Appends complete lines to one file; opened lazily, closed by ``close``."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False, lock_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.lock_timeout = lock_timeout
        self.torn_bytes_removed = 0
        self.newlines_added = 0
        self._fd: int | None = None
        self._our_end = -1  # the file size right after our last write
        self._lock = threading.Lock()

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._fd

    def _acquire(self, fd: int) -> None:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"could not lock {self.path} within {self.lock_timeout}s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def _settle_tail(self, fd: int) -> int:
        """End the file with a newline: end a complete last line, or cut a partial one.

        Returns the file's size afterwards.
        """
        size = os.fstat(fd).st_size
        if size == self._our_end:
            return size  # nobody wrote since our last whole line: the tail is ours and complete
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size
        # Find the last newline; everything after it is a partial line from a crash.
        pos = size
        keep = 0
        while pos > 0:
            start = max(0, pos - 65536)
            chunk = os.pread(fd, pos - start, start)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                break
            pos = start
        if _is_whole_line(os.pread(fd, size - keep, keep)):
            _write_all(fd, b"\n")  # a complete line that only lacks its newline is kept
            self.newlines_added += 1
            return size + 1
        os.ftruncate(fd, keep)
        self.torn_bytes_removed += size - keep
        return keep

    def write(self, data: bytes) -> None:
        """Append ``data`` (whole lines) in one locked write; raises ``OSError`` on failure."""
        with self._lock:
            fd = self._open()
            self._acquire(fd)
            try:
                end = self._settle_tail(fd) + len(data)
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                self._our_end = end
                if self.fsync:
                    os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def sync(self) -> None:
        """fsync the file if it is open."""
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        """Close the file; safe to call more than once."""
        with self._lock:
            if self._fd is not None:
                try:
                    os.close(self._fd)
                finally:
                    self._fd = None
