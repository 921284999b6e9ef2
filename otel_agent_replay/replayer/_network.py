"""The socket guard of strict replays: no byte goes to a host that is not allowed.

Two ways in, both in place only while at least one guarded replay is active (counted: nested and
concurrent replays are safe; the last to end takes them away):

- Opening. The process's audit hook (``_audit``) sees ``socket.connect`` (``connect`` and
  ``connect_ex``), ``socket.sendto`` and ``socket.sendmsg`` with an address (a datagram, or TCP
  Fast Open: ``sendto(data, MSG_FASTOPEN, address)`` on a socket that is not connected) and
  ``socket.getaddrinfo``, raised by CPython's C code for every socket: the ``socket`` module's
  class, ssl sockets, asyncio's selector loop (it calls ``sock.connect``), and the C class
  ``_socket.socket`` however it was built or imported. ``socket.getaddrinfo`` is also wrapped, so
  the addresses an allowed name resolves to are allowed too.
- Sending. A connection opened before the replay (a keep-alive pool warmed at import or by an
  earlier test) never connects again: ``send``, ``sendall``, ``sendto``, ``sendmsg`` and
  ``sendfile`` of ``socket.socket``, and ``send``, ``write`` and ``do_handshake`` of
  ``ssl.SSLSocket`` (its ``sendall`` and ``sendfile`` send through ``send``), are wrapped by a check
  of the connection's peer (``getpeername``) before the original is called. That is the path of
  http.client (urllib, urllib3, requests, botocore), httpcore (httpx, sync and async), asyncio's
  transports (aiohttp, anyio) and ``makefile`` writers.

Each check asks the context variable of the active replay, so it applies to code running in the
replay's context only: the agent's thread, threads given a copy of its context, asyncio tasks. A
background thread started outside the replay (an OTLP exporter's) is let through. A check raises
``NetworkBlocked`` before the original call, so nothing is sent and a name not allowed is not
looked up. A connection to loopback that is let through is counted once (``loopback_connections``)
and, when loopback is allowed by default, warned once per replay.

Not covered (docs/design.md, "Network guard"): a connection of the C class ``_socket.socket``
itself (not ``socket.socket``) opened before the replay, whose ``send`` is C code with no audit
event; bytes written to a socket's descriptor with ``os.write``; C extensions with their own
sockets (grpc's C core, libcurl, uvloop's loop); a bare ``threading.Thread`` started in the replay
(it does not inherit the context); names asyncio resolves in its default executor (no context).
"""

from __future__ import annotations

import functools
import socket
import ssl
from collections.abc import Callable
from typing import Any

from otel_agent_replay.instrumentation import current_replay

from . import _audit
from ._counted import Counted
from ._hosts import NetworkGuard


def _guard() -> NetworkGuard | None:
    guard = getattr(current_replay.get(), "network_guard", None)
    return guard if isinstance(guard, NetworkGuard) else None


def _address(address: Any) -> tuple[str, object] | None:
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        return address[0], address[1]
    return None  # AF_UNIX paths and other families are local


# --- the audit events ------------------------------------------------------------------------


def _on_connect(args: tuple[Any, ...]) -> None:
    guard = _guard()
    if guard is not None:
        target = _address(args[1])
        if target is not None:
            guard.opening(args[0], *target)


def _on_send_to(args: tuple[Any, ...]) -> None:
    """``sendto`` and ``sendmsg``: their address, if they give one."""
    guard = _guard()
    if guard is not None and len(args) > 1:
        target = _address(args[1])
        if target is not None:
            guard.opening(args[0], *target, connect=False)


def _on_getaddrinfo(args: tuple[Any, ...]) -> None:
    guard = _guard()
    host = args[0] if args else None
    if guard is not None and host is not None:
        guard.check(host.decode("idna") if isinstance(host, bytes) else str(host), args[1])


_EVENTS: dict[str, _audit.Handler] = {
    "socket.connect": _on_connect,
    "socket.sendto": _on_send_to,
    "socket.sendmsg": _on_send_to,
    "socket.getaddrinfo": _on_getaddrinfo,
}


# --- the send side ---------------------------------------------------------------------------

_SENDING: tuple[tuple[type[Any], tuple[str, ...]], ...] = (
    (socket.socket, ("send", "sendall", "sendto", "sendmsg", "sendfile")),
    (ssl.SSLSocket, ("send", "write", "do_handshake")),
)


def _checked(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` (a send method) after a check of the connection's peer."""

    @functools.wraps(original)
    def send(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        guard = _guard()
        if guard is not None:
            guard.sending(self)
        return original(self, *args, **kwargs)

    return send


def _learning(original: Callable[..., Any]) -> Callable[..., Any]:
    """``socket.getaddrinfo`` that checks the name first and allows what an allowed name resolves to."""

    @functools.wraps(original)
    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        guard = _guard()
        if guard is None or host is None:
            return original(host, port, *args, **kwargs)
        guard.check(host.decode("idna") if isinstance(host, bytes) else str(host), port)
        infos = original(host, port, *args, **kwargs)
        guard.learn(infos)
        return infos

    return getaddrinfo


_saved: list[tuple[type[Any], str, Any]] = []
_saved_getaddrinfo: list[Callable[..., Any]] = []


def _put() -> None:
    for cls, names in _SENDING:
        for name in names:
            _saved.append((cls, name, cls.__dict__.get(name)))
            setattr(cls, name, _checked(getattr(cls, name)))
    _saved_getaddrinfo.append(socket.getaddrinfo)
    socket.getaddrinfo = _learning(socket.getaddrinfo)
    _audit.watch(_EVENTS)


def _take() -> None:
    _audit.unwatch(_EVENTS)
    for cls, name, original in reversed(_saved):
        if original is None:
            delattr(cls, name)  # it was inherited (from the C class): inherit it again
        else:
            setattr(cls, name, original)
    _saved.clear()
    if _saved_getaddrinfo:
        socket.getaddrinfo = _saved_getaddrinfo.pop()


_checks = Counted(_put, _take)


def install() -> None:
    """Put the checks in place (counted: each ``install`` needs one ``uninstall``)."""
    _checks.enter()


def uninstall() -> None:
    """Take the checks away when the last guarded replay ends."""
    _checks.exit()


def installed() -> bool:
    """Whether the checks are in place now."""
    return _checks.active()
