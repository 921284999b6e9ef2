"""Where a process started from a block's context is given the block's proxy and ticket (``_block``).

- ``subprocess.Popen`` (and so ``subprocess.run``, ``os.popen``, ``asyncio``'s subprocesses): its
  ``_execute_child`` gets the environment the child should have (the proxy's variables, the ticket, the
  startup hook first on ``PYTHONPATH``), whether the caller passed ``env=`` or inherits this one;
- ``os.posix_spawn`` and ``os.posix_spawnp``: their ``env`` likewise (once: a ``Popen`` that spawns
  through them has already put it there);
- ``multiprocessing``'s ``BaseProcess.start``: the process object gets a ``Ticket`` (with the proxy's
  variables), which multiprocessing pickles for a ``spawn`` or ``forkserver`` child, whose unpickling
  joins (``_joined``). A ``fork`` child is a copy of this process and is not given one.

The patches are put once, when the first block starts, and stay: outside a block's context each is one
context-variable lookup and calls the original. What no patch can reach (``os.system``, ``os.exec*``
after a bare ``os.fork``, a C extension's own ``fork``) starts with this process's environment as it
is: counted by a replay's ``child_processes``, not pointed at the proxy.
"""

from __future__ import annotations

import contextvars
import functools
import multiprocessing.process
import os
import platform
import shlex
import subprocess
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, Protocol

from ._remote import JOIN_VARIABLE


class Spawner(Protocol):
    """What a process started from a block is given (``_block.BlockChildren``)."""

    closed: bool
    pid: int

    def environment(self, env: Mapping[str, str] | None, command: str = "") -> dict[str, str]: ...

    def ticket(self, context: contextvars.Context, command: str = "") -> Any: ...

    def started(self, ticket: str, pid: int) -> None: ...


current_block: ContextVar[Spawner | None] = ContextVar("agent_replay_block_children", default=None)
"""The block whose context this is: the processes started here are its children."""

_lock = threading.Lock()
_installed = False
_ENV_INDEX = 7
"""``Popen._execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, ...)``: where
``env`` is (counting ``self``)."""


def _command(words: Any) -> str:
    """A process's command line, as text."""
    if isinstance(words, (str, bytes, os.PathLike)):
        return os.fsdecode(words)
    try:
        return shlex.join(os.fsdecode(w) for w in words)
    except TypeError:
        return repr(words)


def _ours(env: Mapping[Any, Any]) -> bool:
    """Whether ``env`` was already pointed (a ``Popen`` that spawns through ``posix_spawn``)."""
    return JOIN_VARIABLE in env and env.get(JOIN_VARIABLE) != os.environ.get(JOIN_VARIABLE)


def _wrap_execute_child(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def _execute_child(self: Any, *args: Any, **kwargs: Any) -> Any:
        block = current_block.get()
        if block is None:
            return original(self, *args, **kwargs)
        given = kwargs["env"] if "env" in kwargs else args[_ENV_INDEX - 1]
        if given is not None and _ours(given):
            return original(self, *args, **kwargs)
        env = block.environment(given, _command(args[0] if args else kwargs.get("args")))
        if "env" in kwargs:
            kwargs["env"] = env
        else:
            args = (*args[: _ENV_INDEX - 1], env, *args[_ENV_INDEX:])
        result = original(self, *args, **kwargs)
        if JOIN_VARIABLE in env and isinstance(getattr(self, "pid", None), int):
            block.started(env[JOIN_VARIABLE], self.pid)
        return result

    return _execute_child


def _wrap_spawn(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def spawn(path: Any, argv: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        block = current_block.get()
        if block is None or not isinstance(env, Mapping) or _ours(env):
            return original(path, argv, env, *args, **kwargs)
        env = block.environment(env, _command(argv))
        pid = original(path, argv, env, *args, **kwargs)
        if JOIN_VARIABLE in env and isinstance(pid, int):
            block.started(env[JOIN_VARIABLE], pid)
        return pid

    return spawn


def _wrap_start(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def start(self: multiprocessing.process.BaseProcess) -> Any:
        block = current_block.get()
        if block is None or block.closed or os.getpid() != block.pid:
            return original(self)
        ticket = block.ticket(contextvars.copy_context(), f"multiprocessing {type(self).__name__} {self.name}")
        self._agent_replay_ticket = ticket  # type: ignore[attr-defined]
        result = original(self)
        if isinstance(self.pid, int):
            block.started(ticket.context, self.pid)
        return result

    return start


def install() -> None:
    """Put the patches (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        platform.uname().processor  # noqa: B018 - ``uname -p`` once per process, cached: no child of a block
        popen: Any = subprocess.Popen
        popen._execute_child = _wrap_execute_child(popen._execute_child)
        for name in ("posix_spawn", "posix_spawnp"):
            found = getattr(os, name, None)
            if found is not None:
                setattr(os, name, _wrap_spawn(found))
        process: Any = multiprocessing.process.BaseProcess
        process.start = _wrap_start(process.start)
