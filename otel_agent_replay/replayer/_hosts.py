"""What one strict replay lets through below HTTP: the hosts it allows, and the loopback it counts.

``NetworkGuard`` decides; ``_network`` puts its checks in the socket layer's way.
"""

from __future__ import annotations

import contextlib
import ipaddress
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


class NetworkGuard:
    """What one replay allows: host names and addresses (None: loopback only, counted and warned)."""

    def __init__(
        self,
        allow_hosts: Iterable[str] | None,
        describe: Callable[[], str],
        blocked: Callable[[NetworkBlocked], None],
        passthrough: Iterable[str] = (),
        loopback_through: Callable[[], None] = lambda: None,
    ) -> None:
        self.loopback = allow_hosts is None
        """True when loopback is allowed by default (``allow_hosts`` not given)."""
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

    def learn(self, infos: list[Any]) -> None:
        """Addresses an allowed name resolved to are allowed too."""
        with self._lock:
            for info in infos:
                address = info[4]
                if isinstance(address, tuple) and address:
                    ip = _ip(str(address[0]))
                    if ip is not None:
                        self.addresses.add(str(ip))

    def check(self, host: str, port: object, sending: bool = False) -> None:
        """Raise ``NetworkBlocked`` (and count it) unless ``host`` is allowed."""
        if self.allows(host):
            return
        shown = f"[{host}]" if ":" in host else host
        port_text = f":{port}" if port not in (None, 0, "") else ""
        what = (
            f"sent on a connection to {shown}{port_text} opened before the replay (a keep-alive pool)"
            if sending
            else f"tried to connect to {shown}{port_text}"
        )
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
            return  # AF_UNIX: local
        host = peer[0]
        loopback = self._peers.get(host)
        if loopback is None:
            self.check(host, peer[1], sending=True)
            loopback = self._peers[host] = is_loopback(host)
        if loopback and sock.fileno() not in self._counted:
            self._through(sock, host, peer[1], stacklevel=5)
        with contextlib.suppress(TypeError):
            self._sockets[sock] = True

    def _forget(self, sock: Any) -> None:
        with contextlib.suppress(TypeError):
            self._sockets.pop(sock, None)

    def _through(self, sock: Any, host: str, port: object, stacklevel: int) -> None:
        """Count a loopback connection let through below HTTP, and warn once."""
        if None in self._through_ports or port in self._through_ports or running_live.get() or _exporting():
            return
        with self._lock:
            self._counted.add(sock.fileno())
            warn = self.loopback and not self._warned
            self._warned = self._warned or warn
        self._loopback_through()
        if warn:
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
