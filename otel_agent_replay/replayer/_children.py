"""Processes started from a replay's context: counted (``child_processes``) and warned once.

Such a process is given the replay's proxy, and a Python one joins the replay (``proxy``: its HTTP and
its decorated tools are answered from the tape or refused like this process's); what it does besides
(its files, databases, other sockets, a forked child's tools) cannot be answered or refused from here.
So a replay watches the ways a process is started while it is active, in the thread that starts it,
and counts the ones started from its context, warning once with what is and is not sealed:

- the process's audit hook (``_audit``) sees ``subprocess.Popen`` (and so ``os.popen``,
  ``asyncio.create_subprocess_*``), ``os.fork`` (and ``os.spawn*``, which fork on POSIX,
  ``multiprocessing``'s ``fork`` start method, ``pty.fork``), ``os.forkpty``, ``os.posix_spawn``
  (and ``posix_spawnp``) and ``os.system``;
- ``multiprocessing``'s ``spawn`` and ``forkserver`` start methods start their processes through a C
  function that raises no audit event, so ``BaseProcess.start`` is wrapped while a replay is active
  (a ``Process``, a ``Pool``'s workers, ``ProcessPoolExecutor``'s workers started by ``submit``); a
  ``fork`` inside it is not counted twice;
- that C function, ``_posixsubprocess.fork_exec``, is wrapped in its module too, for what calls it
  by that name outside a ``start``: ``multiprocessing.util.spawnv_passfds`` and direct calls
  (``subprocess`` took its own reference at import and is counted by its audit event).

Not counted: multiprocessing's own fork server and resource tracker (``proxy.starting_server``: the
standard library's processes, not the agent's, wherever the block first needs them), processes started
by a thread that does not carry the replay's context (a pool's management thread replacing a worker),
work handed to processes started before the replay, and
``fork_exec`` called through a reference taken before the replay began (``from _posixsubprocess
import fork_exec``, other than ``subprocess``'s).
Nor the standard library describing the machine: ``platform.uname()``'s processor (``uname -p``,
which ``platform.platform()`` and ``platform.processor()`` read, and the openai SDK's headers with
them) is run once per process and cached, so it is read before the first watch begins.
"""

from __future__ import annotations

import _posixsubprocess
import functools
import multiprocessing.process
import multiprocessing.util
import os
import platform
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

from otel_agent_replay.core import ConfigurationError, ReplayWarning
from otel_agent_replay.instrumentation import current_replay
from otel_agent_replay.proxy import mitmdump, starting_server

from . import _audit
from ._counted import Counted


class ChildWatch:
    """One replay's count of the processes started from its context; it warns at the first."""

    def __init__(self, describe: Callable[[], str], counted: Callable[[], None]) -> None:
        self._describe = describe
        self._counted = counted
        self._warned = False
        self._lock = threading.Lock()

    def started(self, how: str, stacklevel: int) -> None:
        """A process was started (``how``: what started it)."""
        self._counted()
        with self._lock:
            warn, self._warned = not self._warned, True
        if warn:
            warnings.warn(
                f"{how} started a process during the replay of {self._describe()}: {_what_is_sealed()} What it "
                "does besides (files it writes itself, databases and other sockets, the work of a program that is not "
                "Python beyond its HTTP) is neither answered from the tape nor refused by this replay, and really "
                "runs; a forked child's decorated tools are served by its own copy of this replay, which this one "
                "does not see. Counted in child_processes, warned once per replay. To keep that sealed too, call it "
                "in this process while testing (threads given the replay's context: contextvars.copy_context().run, "
                "or asyncio.to_thread), or start Python workers with the spawn or forkserver method",
                ReplayWarning,
                stacklevel=stacklevel,
            )


def _what_is_sealed() -> str:
    """What the replay's proxy and the join of Python children seal in a process started from the replay."""
    joined = (
        "a Python process (a subprocess of this interpreter, a multiprocessing spawn or forkserver worker) joins "
        "the replay, its decorated tools answered from the tape or refused like this process's."
    )
    try:
        mitmdump()
    except ConfigurationError as exc:
        return f"its HTTP and HTTPS are not sealed, as the replay's proxy is missing ({exc}); {joined}"
    return f"its HTTP and HTTPS go through the replay's proxy, answered from the tape or refused; {joined}"


def _watch() -> ChildWatch | None:
    watch = getattr(current_replay.get(), "child_watch", None)
    return watch if isinstance(watch, ChildWatch) else None


_inside_start = threading.local()


def _event(how: Callable[[tuple[Any, ...]], str]) -> _audit.Handler:
    def handler(args: tuple[Any, ...]) -> None:
        watch = _watch()
        if watch is not None and not getattr(_inside_start, "depth", 0):
            watch.started(how(args), stacklevel=4)  # started → handler → hook → the caller

    return handler


def _program(args: tuple[Any, ...], index: int) -> str:
    value = args[index] if len(args) > index else None
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, (bytes, os.PathLike)):
        value = os.fsdecode(value)
    return repr(value if isinstance(value, str) else str(value))


_EVENTS: dict[str, _audit.Handler] = {
    "subprocess.Popen": _event(lambda args: f"subprocess.Popen({_program(args, 1)})"),
    "os.fork": _event(lambda args: "os.fork()"),
    "os.forkpty": _event(lambda args: "os.forkpty()"),
    "os.posix_spawn": _event(lambda args: f"os.posix_spawn({_program(args, 0)})"),
    "os.system": _event(lambda args: "os.system(...)"),
}


def _counting_start(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def start(self: multiprocessing.process.BaseProcess) -> None:
        watch = _watch()
        if watch is None:
            return original(self)  # type: ignore[no-any-return]
        watch.started(f"multiprocessing {type(self).__name__}.start() ({self.name})", stacklevel=3)
        _inside_start.depth = getattr(_inside_start, "depth", 0) + 1
        try:
            return original(self)  # type: ignore[no-any-return]
        finally:
            _inside_start.depth -= 1

    return start


_SPAWNV_PASSFDS = multiprocessing.util.spawnv_passfds.__code__


def _counting_fork_exec(original: Callable[..., Any]) -> Callable[..., Any]:
    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        watch = _watch()
        if watch is not None and not getattr(_inside_start, "depth", 0) and not starting_server():
            caller = sys._getframe(1).f_code
            how = "multiprocessing.util.spawnv_passfds" if caller is _SPAWNV_PASSFDS else "_posixsubprocess.fork_exec"
            program = args[0] if args and isinstance(args[0], (list, tuple)) else ()
            watch.started(f"{how}({_program((program,), 0)})", stacklevel=4 if caller is _SPAWNV_PASSFDS else 3)
        return original(*args, **kwargs)

    fork_exec.__name__ = fork_exec.__qualname__ = "fork_exec"
    fork_exec.__doc__ = original.__doc__
    return fork_exec


_saved: list[Callable[..., Any]] = []
_saved_fork_exec: list[Callable[..., Any]] = []


def _put() -> None:
    platform.uname().processor  # noqa: B018 - ``uname -p`` once per process, cached, before watching
    process = multiprocessing.process.BaseProcess
    _saved.append(process.start)
    process.start = _counting_start(process.start)  # type: ignore[method-assign]
    _saved_fork_exec.append(_posixsubprocess.fork_exec)
    _posixsubprocess.fork_exec = _counting_fork_exec(_posixsubprocess.fork_exec)
    _audit.watch(_EVENTS)


def _take() -> None:
    _audit.unwatch(_EVENTS)
    if _saved:
        multiprocessing.process.BaseProcess.start = _saved.pop()  # type: ignore[method-assign]
    if _saved_fork_exec:
        _posixsubprocess.fork_exec = _saved_fork_exec.pop()


_watching = Counted(_put, _take)


def install() -> None:
    """Watch process starts (counted: each ``install`` needs one ``uninstall``)."""
    _watching.enter()


def uninstall() -> None:
    """Stop watching when the last replay ends."""
    _watching.exit()
