"""Opening the files a tape is made of (the tape, its blobs) without trusting what the path names.

A path may name a FIFO (an open that never returns), a device (``/dev/zero``: reading that
never ends), a kernel file (``/proc/self/mem``), a symlink loop, or a blob linked to any of
these. Each is refused at once, before a byte is read; reads are bounded by a size cap.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO, Final

from ._errors import TapeFormatError, TapeNotFoundError

MAX_LINE_BYTES: Final = 1 << 30
"""Default cap on one line of a tape (1 GiB: a Collector batch of a few hundred MB still loads)."""
MAX_BLOB_BYTES: Final = 256 << 20
"""Default cap on one blob (a full payload stored beside a tape): 256 MiB."""

_KINDS: Final = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)
_KERNEL_FILESYSTEMS: Final = ("/proc/", "/sys/")


def open_regular(path: str, what: str, buffering: int = -1) -> IO[bytes]:
    """Open ``path`` for reading if it is a regular file; else ``TapeFormatError`` (or
    ``TapeNotFoundError`` for a missing file or a symlink loop), at once.

    ``FileNotFoundError`` is raised as ``TapeNotFoundError`` with a short message; callers that
    know the fix catch it and say more.
    """
    real = os.path.realpath(path)
    if real.startswith(_KERNEL_FILESYSTEMS):
        raise TapeFormatError(f"this is {real}, a file of the kernel, not a {what}; pass a regular file", path=path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TapeNotFoundError(f"{path}: no such {what}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TapeNotFoundError(f"{path}: a symlink loop, not a {what}; fix or remove the link") from None
        if exc.errno == errno.EISDIR:
            raise TapeFormatError(f"this is a directory, not a {what}", path=path) from None
        raise TapeFormatError(f"cannot open the {what} ({exc.strerror})", path=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise TapeFormatError(f"this is {kind}, not a {what}; pass a regular file", path=path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, what: str, max_bytes: int) -> bytes:
    """The whole of a regular file of at most ``max_bytes`` (``TapeFormatError`` beyond)."""
    with open_regular(path, what) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TapeFormatError(
            f"the {what} is larger than the cap of {max_bytes:,} bytes; raise the cap if it is genuine", path=path
        )
    return data
