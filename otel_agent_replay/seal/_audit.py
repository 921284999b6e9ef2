"""One audit hook (PEP 578) for the whole process, through which replays watch the C level.

CPython raises audit events from inside its C functions: ``socket.connect`` (``connect`` and
``connect_ex`` of every socket, including the C class ``_socket.socket`` that code may build
without the ``socket`` module's Python class), ``socket.sendto`` and ``socket.sendmsg`` (with
the address they send to: datagrams, TCP Fast Open), ``subprocess.Popen``, ``os.fork``,
``os.posix_spawn``, ``os.system`` … A Python method patch cannot see what the C level does by
itself; an audit hook sees every one of those calls, whoever makes it.

An audit hook cannot be removed (PEP 578), so this module adds one, the first time a replay needs
it, and keeps it for the life of the process; what it does is decided by a table of handlers
that replays fill while they are active and empty when they end. With no replay active the hook
is a dictionary lookup that finds nothing (``bench/bench_guard.py`` measures it). A handler runs
in the thread that made the call, before the call does anything, so an exception it raises is
raised by that call instead (nothing is sent, nothing is started).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

Handler = Callable[[tuple[Any, ...]], None]
"""Called with the event's arguments (the socket and the address, the command …)."""

_handlers: dict[str, Handler] = {}
_lock = threading.Lock()
_hooked = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    handler = _handlers.get(event)
    if handler is not None:
        handler(args)


def watch(events: dict[str, Handler]) -> None:
    """Hand these events to these handlers (adding the process's hook the first time)."""
    global _hooked
    with _lock:
        if not _hooked:
            sys.addaudithook(_hook)
            _hooked = True
        _handlers.update(events)


def unwatch(events: dict[str, Handler]) -> None:
    """Stop handing these events to these handlers (a handler since put in their place stays)."""
    with _lock:
        for event, handler in events.items():
            if _handlers.get(event) is handler:
                del _handlers[event]


def watched() -> frozenset[str]:
    """The events handled now."""
    with _lock:
        return frozenset(_handlers)
