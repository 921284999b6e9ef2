"""The socket guard of strict replays: no byte goes to a host or a UNIX-domain socket that is not allowed,
and no name is looked up that is not an allowed host.

Two ways in, both in place only while at least one guarded replay is active (counted: nested and
concurrent replays are safe; the last to end takes them away):

- Opening. The process's audit hook (``_audit``) sees ``socket.connect`` (``connect`` and
  ``connect_ex``), ``socket.sendto`` and ``socket.sendmsg`` with an address (a datagram, or TCP
  Fast Open: ``sendto(data, MSG_FASTOPEN, address)`` on a socket that is not connected), an
  internet address or a UNIX-domain path alike, and name resolution: ``socket.getaddrinfo``,
  ``socket.gethostbyname`` (``gethostbyname`` and ``gethostbyname_ex``), ``socket.gethostbyaddr``
  and ``socket.getnameinfo``, raised by CPython's C code for every socket and every caller: the
  ``socket`` module's class, ssl sockets, asyncio's selector loop (it calls ``sock.connect``), the C
  class ``_socket.socket`` and the C module's functions however they were built or imported.
  ``getaddrinfo``, ``gethostbyname`` and ``gethostbyname_ex`` of the ``socket`` module are also
  wrapped, so the addresses an allowed name resolves to are allowed too.
- Sending. A connection opened before the replay (a keep-alive pool warmed at import or by an
  earlier test) never connects again: ``send``, ``sendall``, ``sendto``, ``sendmsg`` and
  ``sendfile`` of ``socket.socket``, and ``send``, ``write`` and ``do_handshake`` of
  ``ssl.SSLSocket`` (its ``sendall`` and ``sendfile`` send through ``send``), are wrapped by a check
  of the connection's peer (``getpeername``: an address, or a UNIX-domain path) before the original
  is called. That is the path of http.client (urllib, urllib3, requests, botocore), httpcore (httpx,
  sync and async), asyncio's transports (aiohttp, anyio) and ``makefile`` writers. The wrappers have
  no ``__wrapped__`` (it would hand out the unchecked original), and the C class's own send methods,
  called unbound on a socket (``_socket.socket.send(sock, data)``, ``socket.SocketType.sendall``), are
  reached through a stand-in put in place of ``_socket.socket`` and ``socket.SocketType`` (``_Sealed``:
  the real class for everything else, ``isinstance`` and subclassing included).

Each check asks the context variable of the active replay, so it applies to code running in the
replay's context only: the agent's thread, threads given a copy of its context, asyncio tasks. A
background thread started outside the replay (an OTLP exporter's) is let through. A check raises
``NetworkBlocked`` before the original call, so nothing is sent and a name not allowed is not
looked up. A local connection that is let through (loopback, a UNIX-domain path) is counted once
(``loopback_connections``) and, when let through by default, warned once per replay.

Not covered (docs/design.md, "Network guard"): the C class's send methods reached another way than
through those two names (a reference taken before the replay, ``type(sock).__mro__``), a TLS
connection's ``_sslobj.write``, bytes written to a socket's descriptor with ``os.write``; C
extensions with their own sockets (grpc's C core, libcurl, uvloop's loop); a bare ``threading.Thread``
started in the replay (it does not inherit the context); names asyncio resolves in its default
executor (no context).
"""

from __future__ import annotations

import _socket
import socket
import ssl
from collections.abc import Callable
from typing import Any

from otel_agent_replay.instrumentation import current_replay

from . import _audit
from ._counted import Counted
from ._hosts import NetworkGuard, Way, socket_path


def _guard() -> NetworkGuard | None:
    guard = getattr(current_replay.get(), "network_guard", None)
    return guard if isinstance(guard, NetworkGuard) else None


def _address(address: Any) -> tuple[str, object] | None:
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        return address[0], address[1]
    return None  # a UNIX-domain path (``socket_path``) or another family's address


def _name(host: Any) -> str:
    return host.decode("idna") if isinstance(host, bytes) else str(host)


# --- the audit events ------------------------------------------------------------------------


def _on_connect(args: tuple[Any, ...]) -> None:
    guard = _guard()
    if guard is not None:
        target = _address(args[1])
        if target is not None:
            guard.opening(args[0], *target)
            return
        path = socket_path(args[1])
        if path is not None:
            guard.opening_path(args[0], path)


def _on_send_to(args: tuple[Any, ...]) -> None:
    """``sendto`` and ``sendmsg``: their address, if they give one."""
    guard = _guard()
    if guard is not None and len(args) > 1:
        target = _address(args[1])
        if target is not None:
            guard.opening(args[0], *target, connect=False)
            return
        path = socket_path(args[1])
        if path is not None:
            guard.opening_path(args[0], path, connect=False)


def _on_getaddrinfo(args: tuple[Any, ...]) -> None:
    guard = _guard()
    host = args[0] if args else None
    if guard is not None and host is not None:
        guard.check(_name(host), args[1])  # a connection's first step: said as the connection it is for


def _on_resolve(args: tuple[Any, ...]) -> None:
    """``gethostbyname``, ``gethostbyname_ex`` (a name) and ``gethostbyaddr`` (an address or a name)."""
    guard = _guard()
    if guard is not None and args:
        guard.check(_name(args[0]), None, Way.RESOLVE)


def _on_getnameinfo(args: tuple[Any, ...]) -> None:
    guard = _guard()
    target = _address(args[0]) if args else None
    if guard is not None and target is not None:
        guard.check(target[0], target[1], Way.RESOLVE)


_EVENTS: dict[str, _audit.Handler] = {
    "socket.connect": _on_connect,
    "socket.sendto": _on_send_to,
    "socket.sendmsg": _on_send_to,
    "socket.getaddrinfo": _on_getaddrinfo,
    "socket.gethostbyname": _on_resolve,
    "socket.gethostbyaddr": _on_resolve,
    "socket.getnameinfo": _on_getnameinfo,
}


# --- the send side ---------------------------------------------------------------------------

_SENDING: tuple[tuple[type[Any], tuple[str, ...]], ...] = (
    (socket.socket, ("send", "sendall", "sendto", "sendmsg", "sendfile")),
    (ssl.SSLSocket, ("send", "write", "do_handshake")),
)
_C_CLASS: type[Any] = _socket.socket
_C_SENDS = tuple(name for name in ("send", "sendall", "sendto", "sendmsg", "sendmsg_afalg") if hasattr(_C_CLASS, name))


def _checked(original: Callable[..., Any], owner: type[Any]) -> Callable[..., Any]:
    """``original`` (a send method) after a check of the connection's peer; no ``__wrapped__``."""

    def send(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        guard = _guard()
        if guard is not None:
            guard.sending(self)
        return original(self, *args, **kwargs)

    name = getattr(original, "__name__", "send")
    send.__name__ = name
    send.__qualname__ = f"{owner.__qualname__}.{name}"
    send.__doc__ = getattr(original, "__doc__", None)
    send.__module__ = owner.__module__
    return send


class _Sealed:
    """What ``_socket.socket`` and ``socket.SocketType`` name while the guard is in place: the C class for
    every use (building a socket, its attributes, ``isinstance``, ``issubclass``, a class built on it), but
    its send methods, called unbound on a socket, check the connection's peer first."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        checked = _C_CHECKED.get(name)
        if checked is not None:
            return checked
        if name == "__mro_entries__":
            return object.__getattribute__(self, name)
        return getattr(_C_CLASS, name)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type[Any], ...]:
        return (_C_CLASS,)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _C_CLASS(*args, **kwargs)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, _C_CLASS)

    def __subclasscheck__(self, subclass: type[Any]) -> bool:
        return issubclass(subclass, _C_CLASS)

    def __eq__(self, other: object) -> bool:
        return other is self or other is _C_CLASS

    def __hash__(self) -> int:
        return hash(_C_CLASS)

    def __repr__(self) -> str:
        return repr(_C_CLASS)


_C_CHECKED: dict[str, Callable[..., Any]] = {name: _checked(getattr(_C_CLASS, name), _C_CLASS) for name in _C_SENDS}
_SEALED = _Sealed()
_NAMES_OF_THE_C_CLASS: tuple[tuple[Any, str], ...] = ((_socket, "socket"), (socket, "SocketType"))


def _learning(original: Callable[..., Any]) -> Callable[..., Any]:
    """A resolver of the ``socket`` module (``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``) that
    checks the name first and allows the addresses an allowed name resolves to."""

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        guard = _guard()
        if guard is None or host is None:
            return original(host, *args, **kwargs)
        guard.check(_name(host), args[0] if args else None, Way.CONNECT if args else Way.RESOLVE)
        found = original(host, *args, **kwargs)
        guard.learn(found)
        return found

    resolve.__name__ = resolve.__qualname__ = original.__name__
    resolve.__doc__ = original.__doc__
    resolve.__module__ = "socket"
    return resolve


_RESOLVERS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex")
_saved: list[tuple[Any, str, Any]] = []


def _put() -> None:
    for cls, names in _SENDING:
        for name in names:
            _saved.append((cls, name, cls.__dict__.get(name)))
            setattr(cls, name, _checked(getattr(cls, name), cls))
    for name in _RESOLVERS:
        _saved.append((socket, name, getattr(socket, name)))
        setattr(socket, name, _learning(getattr(socket, name)))
    for module, name in _NAMES_OF_THE_C_CLASS:
        _saved.append((module, name, getattr(module, name)))
        setattr(module, name, _SEALED)
    _audit.watch(_EVENTS)


def _take() -> None:
    _audit.unwatch(_EVENTS)
    for owner, name, original in reversed(_saved):
        if original is None:
            delattr(owner, name)  # it was inherited (from the C class): inherit it again
        else:
            setattr(owner, name, original)
    _saved.clear()


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
