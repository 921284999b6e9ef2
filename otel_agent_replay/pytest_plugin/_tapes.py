"""Where a test's tape lives, and the lock a test holds on it while it records or replays it.

The tape's path comes from ``--agent-tapes-dir``, the ini value, ``tapes_dir`` in the rootdir's pyproject.toml
or ``tapes`` beside the test module, and must resolve inside that folder. The lock is a file in the temporary
folder named by the tape's resolved path: exclusive to record, shared to replay, so two processes never record
one tape at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import pytest

from otel_agent_replay.core import ConfigurationError, project_settings

from ._state import safe_name

_UNREAD: Any = object()
_PROJECT_TAPES: pytest.StashKey[Path | None] = pytest.StashKey()
"""``tapes_dir`` of the rootdir's pyproject.toml, read at the first test that needs it."""


def _tapes_root(item: pytest.Item, module: Path) -> Path:
    """The tapes folder: the option (relative to the working folder), the ini value (relative to the ini
    file's folder), ``tapes_dir`` under ``[tool.otel-agent-replay]`` in pyproject.toml, else ``tapes``
    beside the test module."""
    config = item.config
    option = config.getoption("agent_tapes_dir")
    if option:
        return Path(option)
    ini = config.getini("agent_tapes_dir")
    if ini:
        path = Path(ini)
        return path if path.is_absolute() or config.inipath is None else config.inipath.parent / path
    configured = config.stash.get(_PROJECT_TAPES, _UNREAD)
    if configured is _UNREAD:  # read once per session: the rootdir's settings do not move under it
        configured = project_settings(Path(str(config.rootpath))).tapes_dir
        config.stash[_PROJECT_TAPES] = configured
    if configured:
        return Path(configured)
    return module.parent / "tapes"


_RESOLVED_ROOTS: pytest.StashKey[dict[Path, Path]] = pytest.StashKey()
"""Each tapes folder resolved, once per session."""


def _resolved_root(item: pytest.Item, root: Path) -> Path:
    """The tapes folder resolved, at the first test of the session that uses it (not at every test). The tape's
    own path is still resolved at each test, so a tape is accepted only inside the folder as it resolved at
    the session's start: a link swapped in under the folder later can make a tape fail, never let one in."""
    known = item.config.stash.setdefault(_RESOLVED_ROOTS, {})
    resolved = known.get(root)
    if resolved is None:
        resolved = known[root] = root.resolve()
    return resolved


def tape_path_for(item: pytest.Item, given: str | None) -> Path:
    """Where a test's tape lives; it must stay inside the tapes folder (a symlinked folder included).

    By default ``<tapes>/<module>/<Class>/<test>.jsonl``: the class (for tests in classes) keeps
    ``TestA::test_same`` and ``TestB::test_same`` apart.
    """
    return tape_paths(item, given)[0]


def tape_paths(item: pytest.Item, given: str | None) -> tuple[Path, Path]:
    """``tape_path_for``'s path, and the same resolved (the tape lock's name)."""
    module = Path(str(item.path))
    root = _tapes_root(item, module)
    folder = root / safe_name(module.stem)
    if given is None:
        classes = item.nodeid.split("::")[1:-1]
        target = folder.joinpath(*(safe_name(c) for c in classes), f"{safe_name(item.name)}.jsonl")
        where = "its default tape path"
    else:
        target = folder / given
        where = f"@pytest.mark.agent_tape({given!r})"
    resolved = target.resolve()
    if not resolved.is_relative_to(_resolved_root(item, root)):
        raise ConfigurationError(
            f"{item.nodeid}: {where} points outside the tapes folder {root} (resolved: {resolved}; a "
            "symlinked folder?); give a path relative to it, or remove the link"
        )
    return (resolved if given is not None else target), resolved


_lock_folders: dict[str, str] = {}
"""The lock folder of each temporary folder, once it was made (made once per process, not per test)."""


def _lock_file(key: str) -> IO[str]:
    """The lock file named ``key`` in the temporary folder's ``otel-agent-replay-locks``, opened to append."""
    temp = tempfile.gettempdir()
    folder = _lock_folders.get(temp)
    if folder is not None:
        try:
            return open(os.path.join(folder, f"{key}.lock"), "a+")
        except FileNotFoundError:  # the folder was removed since (a cleaner of the temporary folder)
            pass
    folder = os.path.join(temp, "otel-agent-replay-locks")
    os.makedirs(folder, exist_ok=True)
    _lock_folders[temp] = folder
    return open(os.path.join(folder, f"{key}.lock"), "a+")


def lock_tape(path: Path, nodeid: str, *, exclusive: bool, resolved: Path | None = None) -> IO[str] | None:
    """Lock the tape for this test: exclusive to record it, shared to replay it (a lock file in the
    temporary folder, named by the tape's resolved path, ``resolved`` when the caller has it). Another process
    recording it is a clear error."""
    key = hashlib.sha256(str(resolved or path.resolve()).encode("utf-8")).hexdigest()[:24]
    try:
        handle = _lock_file(key)
    except OSError:
        return None  # no lock folder we may write (another user's): the tape is used unlocked
    try:
        fcntl.flock(handle, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError:
        holder = ""
        for _ in range(40):  # the holder writes its name just after it takes the lock: give it a moment
            handle.seek(0)
            holder = handle.read().strip()
            if holder:
                break
            time.sleep(0.025)
        handle.close()
        holder = holder or "another process"
        doing = "record" if exclusive else "replay"
        raise ConfigurationError(
            f"{nodeid}: cannot {doing} the tape {path}: it is in use by {holder}, and one of you is recording "
            "it. Two tests (or two pytest-xdist workers) must not record one tape at once: give each test its "
            "own tape (the default path), or keep them in one worker (pytest-xdist's --dist loadfile)"
        ) from None
    if exclusive:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{nodeid} (pid {os.getpid()})")
        handle.flush()
    return handle


def unlock(lock: IO[str] | None) -> None:
    """Release a test's hold on its tape (``lock_tape``'s file; None when it was used unlocked)."""
    if lock is not None:
        lock.close()  # closing the file releases its flock
