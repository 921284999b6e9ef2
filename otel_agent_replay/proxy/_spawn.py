"""Where a process started from a block's context is given the block's proxy and ticket (``_block``).

- ``subprocess.Popen`` (and so ``subprocess.run``, ``os.popen``, ``asyncio``'s subprocesses): its
  ``_execute_child`` gets the environment the child should have (the proxy's variables, the ticket, the
  startup hook first on ``PYTHONPATH``), whether the caller passed ``env=`` or inherits this one;
- ``os.posix_spawn`` and ``os.posix_spawnp``: their ``env`` likewise (once: a ``Popen`` that spawns
  through them has already put it there);
- ``_posixsubprocess.fork_exec`` in its module, for what calls it by that name (``subprocess`` took its
  own reference at import): ``multiprocessing.util.spawnv_passfds`` and direct calls, whose ``env`` (None:
  this process's) is pointed likewise;
- ``multiprocessing``'s ``BaseProcess.start``: the process object gets a ``Ticket`` (with the proxy's
  variables), which multiprocessing pickles for a ``spawn`` or ``forkserver`` child, whose unpickling
  joins (``_joined``). A ``fork`` child is a copy of this process and is not given one. The start itself
  runs outside the block's context: the ``spawnv_passfds`` of a spawn start is not pointed a second time;
- multiprocessing's own servers, the fork server and the resource tracker (``ensure_running``), are
  started outside the block's context wherever they are first needed: they serve this process for its
  whole life, and one started with the block's proxy, ticket and startup folder would hand them to every
  later worker (a proxy gone, a block ended). ``starting_server`` says so to a replay's count, which
  leaves them out.

The patches are put once, when the first block starts (before a replay's own count of process starts
wraps ``fork_exec`` and ``start`` over them, and puts back what it found), and stay: outside a block's
context each is one context-variable lookup and calls the original. What no patch can reach
(``os.system``, ``os.exec*`` after a bare ``os.fork``, a C extension's own ``fork``, ``fork_exec`` through
a reference taken before the first block) starts with this process's environment as it is, not pointed
at the proxy: counted by a replay's ``child_processes`` where its audit hook sees it (``os.system``, the
``os.fork``), not the last two.
"""

from __future__ import annotations

import _posixsubprocess
import contextvars
import functools
import multiprocessing.forkserver
import multiprocessing.process
import multiprocessing.resource_tracker
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
_FORK_EXEC_ENV = 5
"""``fork_exec(args, executable_list, close_fds, pass_fds, cwd, env, ...)`` (3.10 to 3.14 alike): where ``env``
is, a list of ``b"NAME=value"`` or None."""


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


def _wrap_fork_exec(original: Callable[..., Any]) -> Callable[..., Any]:
    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        block = current_block.get()
        if block is None or len(args) <= _FORK_EXEC_ENV:
            return original(*args, **kwargs)
        given = args[_FORK_EXEC_ENV]
        env = None if given is None else dict(_entry(item) for item in given)
        if env is not None and _ours(env):
            return original(*args, **kwargs)
        pointed = block.environment(env, _command(args[0]))
        listed = [os.fsencode(name) + b"=" + os.fsencode(value) for name, value in pointed.items()]
        pid = original(*args[:_FORK_EXEC_ENV], listed, *args[_FORK_EXEC_ENV + 1 :], **kwargs)
        if JOIN_VARIABLE in pointed and isinstance(pid, int):
            block.started(pointed[JOIN_VARIABLE], pid)
        return pid

    fork_exec.__name__ = fork_exec.__qualname__ = "fork_exec"
    fork_exec.__doc__ = original.__doc__
    return fork_exec


def _entry(item: Any) -> tuple[str, str]:
    """``b"NAME=value"`` as (name, value)."""
    name, _, value = os.fsdecode(item).partition("=")
    return name, value


_serving: ContextVar[bool] = ContextVar("agent_replay_multiprocessing_server", default=False)


def starting_server() -> bool:
    """Whether multiprocessing's own fork server or resource tracker is being started here: a process of the
    standard library's, no child of the agent's (a replay does not count it)."""
    return _serving.get()


def _outside(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` run outside any block's context (multiprocessing's own servers, see the module)."""

    @functools.wraps(original)
    def outside(*args: Any, **kwargs: Any) -> Any:
        block, serving = current_block.set(None), _serving.set(True)
        try:
            return original(*args, **kwargs)
        finally:
            _serving.reset(serving)
            current_block.reset(block)

    return outside


def _wrap_start(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def start(self: multiprocessing.process.BaseProcess) -> Any:
        block = current_block.get()
        if block is None or block.closed or os.getpid() != block.pid:
            return original(self)
        ticket = block.ticket(contextvars.copy_context(), f"multiprocessing {type(self).__name__} {self.name}")
        self._agent_replay_ticket = ticket  # type: ignore[attr-defined]
        token = current_block.set(None)  # the ticket carries it: the start's own spawnv_passfds is not pointed
        try:
            result = original(self)
        finally:
            current_block.reset(token)
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
        _posixsubprocess.fork_exec = _wrap_fork_exec(_posixsubprocess.fork_exec)
        process: Any = multiprocessing.process.BaseProcess
        process.start = _wrap_start(process.start)
        for module, name in (
            (multiprocessing.forkserver, "_forkserver"),
            (multiprocessing.resource_tracker, "_resource_tracker"),
        ):
            server: Any = getattr(module, name)
            type(server).ensure_running = _outside(type(server).ensure_running)
            module.ensure_running = server.ensure_running  # type: ignore[attr-defined]  # its bound alias, taken at import
