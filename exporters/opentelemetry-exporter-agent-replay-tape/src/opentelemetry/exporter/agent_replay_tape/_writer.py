"""Appending whole lines to a shared file, safely across threads and processes.

Each batch is written with ``O_APPEND`` while holding an exclusive ``flock`` on the
file itself, so lines from several processes never interleave. Waiting for the lock is
bounded: a writer that cannot get it in time reports failure instead of blocking the
application.

Before an append the file is made to end in a newline: a torn last line (left by a
process killed mid-write) is cut off, so new lines never glue onto it, while a complete
last line that only lacks its newline (decided by parsing it as strict JSON) gets one.

A write can stop part way (a full disk, a file size limit): ``os.write`` returns a short
count and the next call fails. The writer counts the bytes that reached the file, so it
knows which lines are whole on it and how much of the next one is there. The caller
retries only the lines that are not whole; the retry first finishes the torn line where
it stopped, if the file still ends with exactly that part of it, or else (another writer
cut it or ended it in the meantime) checks the tail as above and writes the line whole.
So a retry never writes a line twice, and ``close`` cuts a torn line of ours that was
never finished.

Each append first checks that the path still names the open file: one ``stat`` of the path,
its device and inode against the open file's (taken by ``fstat`` once, when it was opened: an open
file keeps its inode, whose number is not reused while it is open); the same ``stat`` gives the
file's size, since it is the same inode. When the file was deleted, moved away
or replaced (``os.replace``), the writer opens the path again, creating it if needed,
and counts how many lines it had written to the old file, so that nothing more goes to
a file nobody will read.

Each append also checks that the file was not changed underneath it: the file must still be
at least as long as it was right after our last write, and still hold our last line where we
wrote it (one ``pread`` of that line). Another process that truncated the tape in place
(``truncate -s 0``, ``> tape``) or overwrote it is noticed there: the lines of ours that are no
longer on the file are counted (``lines_lost``), and the recording goes on. When what is left
ends in complete tape lines (or nothing), the writer appends after it; when the last complete
line is no longer a JSON object (a garbage line), appending would leave an unloadable tape, so
the changed file is moved aside to ``{name}.changed-{n}`` (kept, never deleted) and a new file
is started at the path.
"""

from __future__ import annotations

import bisect
import fcntl
import os
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson


class LockTimeout(OSError):
    """The file lock was not obtained in time."""


class AppendError(OSError):
    """Appending failed after ``lines_done`` of the given lines were whole on the file."""

    def __init__(self, cause: OSError, lines_done: int) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.cause = cause
        self.lines_done = lines_done

    def __str__(self) -> str:
        return str(self.cause)


@dataclass(frozen=True)
class _Torn:
    """The part of a line (``head``) that a failed write left at offset ``start`` of the file."""

    start: int
    head: bytes

    def still_ends(self, fd: int, size: int) -> bool:
        """Whether the file (of ``size`` bytes) still ends with this part of the line."""
        return size == self.start + len(self.head) and os.pread(fd, len(self.head), self.start) == self.head


def _is_whole_line(tail: bytes) -> bool:
    """Whether a last line without its newline is complete: one strict JSON object (a torn line never is)."""
    try:
        return isinstance(orjson.loads(tail), dict)
    except orjson.JSONDecodeError:
        return False


def _ends_in_tape_lines(fd: int, size: int) -> bool:
    """Whether the file's last complete line (if any) is a JSON object, as every tape line is."""
    end = size
    if end and os.pread(fd, 1, end - 1) != b"\n":
        # a last line without its newline is settled later (kept or cut); judge the line before it
        end = _last_newline(fd, end)
    if end <= 0:
        return True
    start = _last_newline(fd, end - 1)
    return _is_whole_line(os.pread(fd, end - 1 - start, start))


def _last_newline(fd: int, size: int) -> int:
    """The offset just past the last newline in the first ``size`` bytes, or 0."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        idx = os.pread(fd, pos - start, start).rfind(b"\n")
        if idx >= 0:
            return start + idx + 1
        pos = start
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class AppendWriter:
    """Appends complete lines to one file; opened lazily, closed by ``close``."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False, lock_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._path = os.fspath(path)
        self.fsync = fsync
        self.lock_timeout = lock_timeout
        self.torn_bytes_removed = 0
        self.newlines_added = 0
        self.reopened = 0
        """How often the path was found to name another file (or none) and was opened again."""
        self.reopen_reason: Literal["deleted", "replaced"] | None = None
        """Why, the last time: deleted (or moved away), or replaced by another file."""
        self.lines_left_behind = 0
        """Lines this writer had written to files that were then deleted, moved or replaced."""
        self.changed_underneath = 0
        """How often the file was found cut or overwritten behind our last write by someone else."""
        self.change_reason: Literal["truncated", "overwritten"] | None = None
        """What was found the last time: the file shorter than our last write, or our last line gone."""
        self.lines_lost = 0
        """Lines this writer had written that another process then cut off or overwrote."""
        self.moved_aside: list[Path] = []
        """Files moved aside because what another process left there no longer ended in tape lines."""
        self._lines_here = 0  # lines this writer has written to the file now open
        self._ends = array("q")  # where each of those lines ends on the file (ascending)
        self._last: bytes | None = None  # our last whole line, which ends at _our_end
        self._fd: int | None = None
        self._id: tuple[int, int] = (-1, -1)  # the open file's (device, inode)
        self._our_end = -1  # the file size right after our last write, when that ended a line
        self._torn: _Torn | None = None
        self._lock = threading.Lock()

    @property
    def has_torn_line(self) -> bool:
        """A failed write left part of the first line not yet written on the file; retry it first."""
        return self._torn is not None

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                st = os.fstat(fd)
            except BaseException:
                os.close(fd)
                raise
            self._fd, self._id = fd, (st.st_dev, st.st_ino)
        return self._fd

    def _acquire(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return  # the usual case: nobody else is writing
        except BlockingIOError:
            pass
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

    def _locked_fd(self) -> tuple[int, int]:
        """Open and lock the file the path names now; returns the descriptor and the file's size."""
        fd = self._open()
        self._acquire(fd)
        for _ in range(3):  # the path could be replaced again while we reopen it; then go on anyway
            try:
                try:
                    there = os.stat(self._path)
                except (FileNotFoundError, NotADirectoryError):
                    reason: Literal["deleted", "replaced"] = "deleted"
                else:
                    if there.st_ino == self._id[1] and there.st_dev == self._id[0]:
                        return fd, there.st_size  # the same inode as ours: its size is our file's
                    reason = "replaced"
            except BaseException:
                fcntl.flock(fd, fcntl.LOCK_UN)
                raise
            self._reopen(fd, reason)
            fd = self._open()
            self._acquire(fd)
        return fd, os.fstat(fd).st_size

    def _reopen(self, fd: int, reason: Literal["deleted", "replaced"]) -> None:
        """Let go of the old file (and its lock): what we knew about its end does not hold for the new one."""
        self._fd = None
        os.close(fd)
        self.reopened += 1
        self.reopen_reason = reason
        self.lines_left_behind += self._lines_here
        self._forget_file()

    def _forget_file(self) -> None:
        self._lines_here = 0
        del self._ends[:]
        self._last = None
        self._our_end = -1
        self._torn = None

    def _check_underneath(self, fd: int, size: int) -> tuple[int, int]:
        """Notice a file cut or overwritten behind our last write; returns the descriptor and size to go on with.

        The descriptor is another (locked) one when the changed file had to be moved aside.
        """
        end, last = self._our_end, self._last
        if end < 0 or last is None:
            return fd, size
        if size >= end and os.pread(fd, len(last), end - len(last)) == last:
            return fd, size  # the usual case: our last line is where we left it
        self.changed_underneath += 1
        if size < end:
            self.change_reason = "truncated"
            kept = bisect.bisect_right(self._ends, size)  # our lines that end within what is left
        else:
            self.change_reason = "overwritten"
            kept = 0
        self.lines_lost += self._lines_here - kept
        self._lines_here = kept
        del self._ends[kept:]
        self._last = None
        self._our_end = -1
        if _ends_in_tape_lines(fd, size):
            return fd, size  # append after what is left (a torn tail is cut by the usual tail check)
        return self._move_aside(fd)

    def _move_aside(self, fd: int) -> tuple[int, int]:
        """Rename the changed file (under its lock) and start a new one at the path."""
        n = len(self.moved_aside) + 1
        while True:
            aside = self.path.with_name(f"{self.path.name}.changed-{n}")
            if not aside.exists():
                break
            n += 1
        try:
            os.rename(self._path, aside)
        except OSError:
            return fd, os.fstat(fd).st_size  # cannot move it: append after it, as before
        self.moved_aside.append(aside)
        self._fd = None
        os.close(fd)  # releases its lock
        self.lines_left_behind += self._lines_here  # ours that were still on it are in the file moved aside
        self._forget_file()
        fd = self._open()
        self._acquire(fd)
        return fd, os.fstat(fd).st_size

    def _settle_tail(self, fd: int, size: int) -> int:
        """End the file with a newline: end a complete last line, or cut a partial one.

        Returns the file's size afterwards.
        """
        if size == self._our_end:
            return size  # nobody wrote since our last whole line: the tail is ours and complete
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size
        keep = _last_newline(fd, size)  # everything after it is the last line, without its newline
        if _is_whole_line(os.pread(fd, size - keep, keep)):
            _write_all(fd, b"\n")  # a complete line that only lacks its newline is kept
            self.newlines_added += 1
            return size + 1
        os.ftruncate(fd, keep)
        self.torn_bytes_removed += size - keep
        return keep

    def _resume(self, fd: int, size: int, line: bytes) -> int:
        """How many bytes of ``line`` (torn by our last, failed write) are on the file and stay there.

        0: the line is not there (someone cut it); len(line): someone gave it its newline;
        in between: the file still ends with exactly that part of it, to be finished.
        """
        torn = self._torn
        self._torn = None
        if torn is None or not line.startswith(torn.head):
            return 0  # not the line we tore (the caller gave up on it): the tail check deals with it
        if size >= torn.start + len(line) and os.pread(fd, len(line), torn.start) == line:
            return len(line)
        return len(torn.head) if torn.still_ends(fd, size) else 0

    def append(self, lines: Sequence[bytes]) -> None:
        """Append ``lines`` (each one whole line ending in a newline) under the lock.

        Raises ``AppendError`` (an ``OSError``) naming how many of ``lines`` are whole on
        the file when it fails; the caller retries the rest, starting with the first of them.
        """
        if not lines:
            return
        done = 0
        with self._lock:
            try:
                fd, size = self._locked_fd()
            except OSError as err:
                raise AppendError(err, 0) from err
            try:
                fd, size = self._check_underneath(fd, size)
            except OSError as err:
                if self._fd == fd:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                raise AppendError(err, 0) from err
            try:
                torn = self._torn
                skip = self._resume(fd, size, lines[0]) if torn is not None else 0
                if torn is not None and skip == len(lines[0]):
                    self._note_lines(torn.start, lines[:1])
                    done, skip = 1, 0
                    lines = lines[1:]
                # Where lines[0] starts on the file: before its torn part, or after a settled tail.
                base = size - skip if skip else self._settle_tail(fd, size)
                if lines:
                    data = lines[0] if len(lines) == 1 else b"".join(lines)
                    self._write(fd, data, skip, base, lines)
                    done += len(lines)
                if self.fsync:
                    os.fsync(fd)
            except AppendError as err:
                done += err.lines_done
                raise AppendError(err.cause, done) from err.cause
            except OSError as err:
                raise AppendError(err, done) from err
            finally:
                self._lines_here += done
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _write(self, fd: int, data: bytes, skip: int, base: int, lines: Sequence[bytes]) -> None:
        """Write ``data[skip:]`` at the end of the file, where ``data`` (``lines`` joined) starts at ``base``."""
        pos = skip
        try:
            if not skip:  # the usual case: the whole of it in one write
                pos = os.write(fd, data)
            if pos < len(data):
                view = memoryview(data)
                while pos < len(data):
                    pos += os.write(fd, view[pos:])
        except OSError as err:
            # Which lines are whole on the file, and how much of the next one is there.
            whole = 0
            offset = 0
            for line in lines:
                if offset + len(line) > pos:
                    break
                offset += len(line)
                whole += 1
            self._note_lines(base, lines[:whole])
            if pos > offset:
                self._torn = _Torn(base + offset, data[offset:pos])
                self._our_end = -1
            elif not whole:
                self._last = None  # nothing of ours ends where the file ends now
            raise AppendError(err, whole) from err
        self._note_lines(base, lines)

    def _note_lines(self, base: int, lines: Sequence[bytes]) -> None:
        """Remember where our whole lines, written from offset ``base`` on, end; the last one ends the file."""
        if not lines:
            return
        ends = self._ends
        pos = base
        for line in lines:
            pos += len(line)
            ends.append(pos)
        self._our_end = pos
        self._last = lines[-1]

    def write(self, data: bytes) -> None:
        """Append ``data`` (whole lines) as one unit; raises ``AppendError`` on failure."""
        self.append((data,))

    def _cut_torn(self, fd: int) -> None:
        """Cut what a failed write left of a line, if the file still ends with it."""
        torn = self._torn
        self._torn = None
        if torn is not None and torn.still_ends(fd, os.fstat(fd).st_size):
            os.ftruncate(fd, torn.start)

    def sync(self) -> None:
        """fsync the file if it is open."""
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (first cutting a torn line of ours that was never finished); safe to call more than once."""
        with self._lock:
            if self._fd is None:
                return
            fd, self._fd = self._fd, None
            try:
                if self._torn is not None:
                    self._acquire(fd)
                    self._cut_torn(fd)
            finally:
                os.close(fd)  # releases the lock
