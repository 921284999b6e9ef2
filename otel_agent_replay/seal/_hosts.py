"""What one strict replay lets through below HTTP: the hosts and UNIX-domain socket paths it allows,
the names it lets be looked up, and the local connections it counts.

``NetworkGuard`` decides; ``_network`` puts its checks in the socket layer's way.
"""

from __future__ import annotations

import contextlib
import enum
import ipaddress
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from otel_agent_replay.core import NetworkBlocked, ReplayWarning
from otel_agent_replay.integrations import suppressed

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    ip = _ip(host)
    return ip.is_loopback if ip is not None else host.lower().rstrip(".") in LOOPBACK_NAMES


def _split(host: str) -> tuple[str, int | None]:
    """``host`` or ``host:port`` (an IPv6 address without brackets has no port)."""
    if host.count(":") == 1:
        name, port = host.rsplit(":", 1)
        return name, int(port) if port.isdigit() else None
    return host, None


running_live: ContextVar[bool] = ContextVar("agent_replay_running_live", default=False)
"""True while the replay runs a call live on purpose (``models="live"``): that call's traffic is expected,
counted in ``live_model_calls``, and not loopback let through unseen."""


def _exporting() -> bool:
    """Whether OpenTelemetry's own export is running here (its traffic is not the agent's)."""
    return suppressed()


class Way(enum.Enum):
    """How the agent's code reached for a host: what a refusal says it tried."""

    CONNECT = "connect"
    SEND = "send"
    RESOLVE = "resolve"


def socket_path(address: object) -> str | None:
    """A UNIX-domain socket's path (``str``; an abstract one starts with NUL), or None for another address."""
    if isinstance(address, bytes):
        return os.fsdecode(address)
    if isinstance(address, str):
        return address
    return None


class NetworkGuard:
    """What one replay allows: host names and addresses (None: loopback only, counted and warned)."""

    def __init__(
        self,
        allow_hosts: Iterable[str] | None,
        describe: Callable[[], str],
        blocked: Callable[[NetworkBlocked], None],
        passthrough: Iterable[str] = (),
        loopback_through: Callable[[], None] = lambda: None,
        allow_sockets: Iterable[str | os.PathLike[str]] | None = None,
    ) -> None:
        self.loopback = allow_hosts is None
        """True when loopback is allowed by default (``allow_hosts`` not given)."""
        self.any_socket = allow_hosts is None and allow_sockets is None
        """True when every UNIX-domain path is allowed, as loopback is, by default (counted and warned)."""
        self.socket_paths = frozenset(os.fspath(path) for path in allow_sockets or ())
        """The UNIX-domain socket paths ``allow_sockets=`` names."""
        # hosts whose HTTP goes live (``passthrough=``) may be connected to, whatever their port
        through = [_split(h) for h in passthrough]
        hosts = (*(allow_hosts or ()), *(name for name, _port in through))
        self.names = frozenset(h.lower().rstrip(".") for h in hosts if _ip(h) is None)
        self.addresses = {str(ip) for ip in (_ip(h) for h in hosts) if ip is not None}
        # loopback ports whose traffic is ``passthrough=`` HTTP, counted in passthrough_requests instead
        self._through_ports = frozenset(port for name, port in through if is_loopback(name))
        self._lock = threading.Lock()
        self._describe = describe
        self._blocked = blocked
        self._loopback_through = loopback_through
        self._peers: dict[str, bool] = {}
        """Allowed peer address → whether it is loopback."""
        self._sockets: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
        """Sockets whose peer was checked and allowed in this replay: the send check's fast path (a system
        call per send costs as much as the send itself in some sandboxes); a connect forgets the socket."""
        self._counted: set[int] = set()
        """Descriptors of the loopback connections counted in this replay."""
        self._warned = False

    def allows(self, host: str) -> bool:
        """Whether the agent's code may connect to (or look up) ``host``."""
        ip = _ip(host)
        if ip is None:
            name = host.lower().rstrip(".")
            return name in self.names or (self.loopback and name in LOOPBACK_NAMES)
        if self.loopback and ip.is_loopback:
            return True
        with self._lock:
            return str(ip) in self.addresses

    def learn(self, found: Any) -> None:
        """Addresses an allowed name resolved to are allowed too: what ``getaddrinfo`` (a list of address
        infos), ``gethostbyname`` (an address) or ``gethostbyname_ex`` (name, aliases, addresses) found."""
        if isinstance(found, str):
            addresses: list[Any] = [found]
        elif isinstance(found, tuple) and len(found) == 3 and isinstance(found[2], list):
            addresses = found[2]
        else:
            addresses = [info[4][0] for info in found if isinstance(info[4], tuple) and info[4]]
        with self._lock:
            for address in addresses:
                ip = _ip(str(address))
                if ip is not None:
                    self.addresses.add(str(ip))

    def check(self, host: str, port: object, way: Way = Way.CONNECT) -> None:
        """Raise ``NetworkBlocked`` (and count it) unless ``host`` is allowed."""
        if self.allows(host):
            return
        shown = f"[{host}]" if ":" in host else host
        port_text = f":{port}" if port not in (None, 0, "") else ""
        what = {
            Way.SEND: f"sent on a connection to {shown}{port_text} opened before the replay (a keep-alive pool)",
            Way.CONNECT: f"tried to connect to {shown}{port_text}",
            Way.RESOLVE: f"tried to look up {shown} (no query was sent)",
        }[way]
        message = (
            f"the agent's code {what} during a strict replay of {self._describe()} (mode='none'): a replay "
            "answers from the tape and sends nothing, and no byte was sent. Decorate that call with @tool or "
            "@model_call so the tape answers it, or allow the host: "
            f"replay(..., allow_hosts=[{host!r}]) (loopback is allowed by default), or network='allow' to turn "
            "the guard off"
        )
        error = NetworkBlocked(message, host=host, port=port if isinstance(port, int) else None)
        self._blocked(error)
        raise error  # ``blocked`` raises it already; never let a connection through if it did not

    def check_path(self, path: str, way: Way = Way.CONNECT) -> None:
        """Raise ``NetworkBlocked`` (and count it) unless the UNIX-domain socket ``path`` is allowed."""
        if self.any_socket or path in self.socket_paths:
            return
        shown = repr(path)
        what = (
            f"sent on a connection to the UNIX-domain socket {shown} opened before the replay"
            if way == Way.SEND
            else f"tried to reach the UNIX-domain socket {shown}"
        )
        message = (
            f"the agent's code {what} during a strict replay of {self._describe()} (mode='none'): a replay "
            "answers from the tape and sends nothing, and no byte was sent. Decorate that call with @tool so the "
            f"tape answers it, or allow the socket: replay(..., allow_sockets=[{path!r}]) (every path is allowed "
            "while loopback is allowed by default, that is while allow_hosts is not given), or network='allow' "
            "to turn the guard off"
        )
        error = NetworkBlocked(message, host=path)
        self._blocked(error)
        raise error

    def opening_path(self, sock: Any, path: str, connect: bool = True) -> None:
        """A connection (or a datagram: ``connect=False``) to the UNIX-domain socket ``path``: checked; counted
        (and warned once) when it is let through by default, like loopback."""
        if connect:
            self._forget(sock)
        self.check_path(path)
        if connect or sock.fileno() not in self._counted:
            self._through(sock, path, None, stacklevel=6)

    def opening(self, sock: Any, host: str, port: object, connect: bool = True) -> None:
        """A connection (or a datagram: ``connect=False``) to ``host``: checked; counted when it is loopback
        (each connect, but a socket's datagrams once)."""
        if connect:
            self._forget(sock)  # its peer changes
        self.check(host, port)
        if is_loopback(host) and (connect or sock.fileno() not in self._counted):
            self._through(sock, host, port, stacklevel=6)

    def sending(self, sock: Any) -> None:
        """A send on a connected socket: its peer is checked (a connection may predate the replay)."""
        try:
            if self._sockets.get(sock):
                return
        except TypeError:  # pragma: no cover - a socket class without weak references
            pass
        try:
            peer = sock.getpeername()
        except OSError:
            return  # not connected: a send without an address sends nothing (one with an address is audited)
        if not isinstance(peer, tuple):
            self._sending_to_path(sock, socket_path(peer))
            return
        host = peer[0]
        loopback = self._peers.get(host)
        if loopback is None:
            self.check(host, peer[1], Way.SEND)
            loopback = self._peers[host] = is_loopback(host)
        if loopback and sock.fileno() not in self._counted:
            self._through(sock, host, peer[1], stacklevel=5)
        with contextlib.suppress(TypeError):
            self._sockets[sock] = True

    def _sending_to_path(self, sock: Any, path: str | None) -> None:
        """A send on a UNIX-domain connection: its peer's path is checked. An unnamed peer (a
        ``socketpair``, asyncio's wake-up pipe, a client connected to a server of this process) is local."""
        if path:
            self.check_path(path, Way.SEND)
            if sock.fileno() not in self._counted:
                self._through(sock, path, None, stacklevel=6)
        with contextlib.suppress(TypeError):
            self._sockets[sock] = True

    def _forget(self, sock: Any) -> None:
        with contextlib.suppress(TypeError):
            self._sockets.pop(sock, None)

    def _through(self, sock: Any, host: str, port: object, stacklevel: int) -> None:
        """Count a loopback (or UNIX-domain: ``port`` None) connection let through below HTTP, and warn once."""
        if port is None:
            if running_live.get() or _exporting():
                return
        elif None in self._through_ports or port in self._through_ports or running_live.get() or _exporting():
            return
        with self._lock:
            self._counted.add(sock.fileno())
            warn = (self.loopback if port is not None else self.any_socket) and not self._warned
            self._warned = self._warned or warn
        self._loopback_through()
        if warn and port is None:
            warnings.warn(
                f"a strict replay of {self._describe()} let a connection to the UNIX-domain socket {host!r} through: "
                "while loopback is allowed by default every local socket path is too (databases and other local "
                "services), and nothing on the tape answers what goes over it. Counted in loopback_connections, "
                "warned once per replay. To block it, replay(..., allow_hosts=[]) or allow_sockets=[] (paths they "
                f"do not name are refused); to let it through without this warning, allow_sockets=[{host!r}]",
                ReplayWarning,
                stacklevel=stacklevel,
            )
        elif warn:
            shown = f"[{host}]" if ":" in host else host
            warnings.warn(
                f"a strict replay of {self._describe()} let a connection to {shown}:{port} through below HTTP: "
                "loopback is allowed by default (databases and other local services), and nothing on the tape "
                "answers what goes over it. If it carries HTTP from a client that speaks it over its own sockets "
                "(dspy 3.x's default engine), those requests went live. Counted in loopback_connections, warned "
                "once per replay. To seal it, send that HTTP through a client the replay captures (dspy: its "
                "litellm engine); to block loopback, replay(..., allow_hosts=[]); to let a local service through "
                f"without this warning, name it: replay(..., allow_hosts=[{host!r}])",
                ReplayWarning,
                stacklevel=stacklevel,  # the frame that connected or sent
            )
