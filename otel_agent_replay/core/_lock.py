"""One writer per tape across processes: an exclusive ``flock`` on ``TAPE.lock`` beside the tape.

The lock file holds its holder's name (pid, host, command, since when) as one JSON object, so a
process that waits, or gives up, can say for whom. The kernel releases a ``flock`` when its holder
exits in any way (an exception, Ctrl-C, ``kill -9``), so a lock is never left held by a dead
process; what such a process leaves is a lock file naming it, which the next writer takes over.

A holder removes the lock file before it lets go of the lock. A waiter that was given the lock on
a file removed meanwhile (or replaced) notices it (the path no longer names the file it locked)
and tries again on the file the path names now, so two writers never hold two different files.

Within one process the lock is re-entrant: a ``replay(mode="once")`` that records through
``record()`` takes it once. A child made by ``fork`` does not inherit it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._errors import TapeError

_log = logging.getLogger(__name__)

_POLL_MAX: Final = 0.05
"""The longest pause between two tries while another process holds the lock (seconds)."""


def lock_path(tape: str | os.PathLike[str]) -> Path:
    """The lock file of a tape: ``TAPE.lock`` beside it."""
    path = Path(tape)
    return path.with_name(path.name + ".lock")


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds (or last held) a tape's lock, as its lock file says."""

    pid: int
    host: str
    command: str
    since: str

    def alive(self) -> bool | None:
        """Whether the holder still runs (None: it runs on another host, so this process cannot tell)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def describe(self) -> str:
        """``pid 123 on host (python agent.py), since 2026-...``, saying when that process has ended."""
        gone = " (no longer running: a process it started holds the lock file open)" if self.alive() is False else ""
        return f"pid {self.pid} on {self.host} ({self.command}), since {self.since}{gone}"


def _me() -> LockHolder:
    command = " ".join(sys.argv) if sys.argv and sys.argv[0] else sys.executable
    if len(command) > 200:
        command = command[:199] + "…"
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return LockHolder(os.getpid(), socket.gethostname(), command, since)


def _read_holder(fd: int) -> LockHolder | None:
    """The holder a lock file names, or None (empty, unreadable, or not what we write)."""
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
        return LockHolder(int(data["pid"]), str(data["host"]), str(data["command"]), str(data["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass
class _Held:
    fd: int
    count: int


_held: dict[str, _Held] = {}
"""The locks this process holds, by lock file path, with how many blocks hold each."""
_held_lock = threading.RLock()


def _forget_in_child() -> None:
    """After ``fork``: the child holds no lock of its parent (closing its copy leaves the parent's held)."""
    global _held_lock
    _held_lock = threading.RLock()
    for held in _held.values():
        with contextlib.suppress(OSError):
            os.close(held.fd)
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _same_file(fd: int, path: str) -> bool:
    try:
        there = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    here = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino)


class TapeLock:
    """The cross-process lock of one tape (``TAPE.lock``)."""

    def __init__(self, tape: str | os.PathLike[str]) -> None:
        self.tape = Path(tape)
        self.path = lock_path(tape)
        self._key = os.path.abspath(self.path)
        self.taken_over: LockHolder | None = None
        """The holder named by a lock file left behind by a process that ended without removing it."""
        self.waited_for: LockHolder | None = None
        """The holder this lock waited for (None: it was free, or its holder did not say who it is)."""
        self.waited = False

    def held(self) -> bool:
        """Whether this process holds the tape's lock (by this object or another)."""
        with _held_lock:
            return self._key in _held

    def acquire(
        self, timeout: float, *, waiting: Callable[[LockHolder | None], None], busy: Callable[[str], str]
    ) -> None:
        """Take the lock, waiting at most ``timeout`` seconds.

        ``waiting`` is called once, with the holder, when another process holds it; at the deadline
        ``TapeError`` is raised with the message ``busy(holder's description)`` makes.
        """
        with _held_lock:
            held = _held.get(self._key)
            if held is not None:
                held.count += 1
                return
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            fd = self._try()
            if fd is not None:
                with _held_lock:
                    _held[self._key] = _Held(fd, 1)
                return
            if not self.waited:
                self.waited = True
                waiting(self.waited_for)
            if time.monotonic() >= deadline:
                who = self.waited_for.describe() if self.waited_for else "another process"
                raise TapeError(f"{self.tape}: {busy(who)}")
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX)

    def _try(self) -> int | None:
        """One try: the locked descriptor of the file the path names, or None while someone else holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        name = os.fspath(self.path)
        for _ in range(100):  # the file can be removed (its holder let go) between open and flock
            try:
                fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise TapeError(
                    f"{self.tape}: cannot create its lock file {name} ({exc.strerror}): a tape is written by one "
                    "process at a time, and its folder must be writable for that"
                ) from None
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise
                    self.waited_for = _read_holder(fd) or self.waited_for
                    os.close(fd)
                    return None
                if not _same_file(fd, name):
                    os.close(fd)  # a file its holder removed as it let go: lock the one there now
                    continue
                left = _read_holder(fd)
                if left is not None:
                    self.taken_over = left
                    _log.info("%s: taking over the lock file left by %s", name, left.describe())
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(_holder_json(_me())).encode(), 0)
                return fd
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                raise
        raise TapeError(f"{self.tape}: could not take its lock file {name}: it keeps being replaced")

    def release(self) -> None:
        """Let go (the last of this process's holds removes the lock file, then unlocks it)."""
        with _held_lock:
            held = _held.get(self._key)
            if held is None:
                return
            held.count -= 1
            if held.count > 0:
                return
            del _held[self._key]
        try:
            if _same_file(held.fd, os.fspath(self.path)):
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
        finally:
            os.close(held.fd)  # the kernel releases the flock with the last descriptor


def _holder_json(holder: LockHolder) -> dict[str, object]:
    return {"pid": holder.pid, "host": holder.host, "command": holder.command, "since": holder.since}


__all__ = ["LockHolder", "TapeLock", "lock_path"]
