"""The network guard of strict replays: a connection to a host not allowed raises ``NetworkBlocked``.

Mechanism. While at least one guarded replay is active, ``socket.socket.connect``,
``socket.socket.connect_ex`` and ``socket.getaddrinfo`` are replaced by checks that then call the
originals; the last guarded replay to end puts the originals back. Every client that opens a TCP
connection through the standard library's sockets goes through them: httpx and httpcore, requests
and urllib3, urllib, http.client, aiohttp and asyncio's streams (the selector loop calls
``sock.connect``), ssl sockets, and raw sockets. The check asks the context variable of the active
replay, so it only stops code that runs in the replay's context: the agent's thread, worker threads
given a copy of its context (``contextvars.copy_context().run``, ``asyncio.to_thread``, what
frameworks use), and asyncio tasks (they copy the context). A background thread started outside the
replay (an OTLP exporter's) has no replay in its context and is let through. The check raises
before the original is called, so no packet leaves: a name not allowed is not even looked up in DNS.

Limits: a thread started with a bare ``threading.Thread`` inside the replay does not inherit the
context and is not guarded; asyncio resolves names in its default executor, which does not copy
the context, so a name is looked up there before the connect is refused; datagrams sent with
``sendto`` without ``connect`` and C extensions that open their own sockets are not seen.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

from otel_agent_replay.core import NetworkBlocked
from otel_agent_replay.instrumentation import current_replay

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


class NetworkGuard:
    """What one replay allows: host names and addresses (None: loopback only)."""

    def __init__(
        self,
        allow_hosts: Iterable[str] | None,
        describe: Callable[[], str],
        blocked: Callable[..., None],
        passthrough: Iterable[str] = (),
    ) -> None:
        self.loopback = allow_hosts is None
        # hosts whose HTTP goes live (``passthrough=``) may be connected to, whatever their port
        hosts = (*(allow_hosts or ()), *(h.rsplit(":", 1)[0] if h.count(":") == 1 else h for h in passthrough))
        self.names = frozenset(h.lower().rstrip(".") for h in hosts if _ip(h) is None)
        self.addresses = {str(ip) for ip in (_ip(h) for h in hosts) if ip is not None}
        self._lock = threading.Lock()
        self._describe = describe
        self._blocked = blocked

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

    def check(self, host: str, port: object) -> None:
        """Raise ``NetworkBlocked`` (and count it) unless ``host`` is allowed."""
        if self.allows(host):
            return
        shown = f"[{host}]" if ":" in host else host
        port_text = f":{port}" if port not in (None, 0, "") else ""
        message = (
            f"the agent's code tried to connect to {shown}{port_text} during a strict replay of {self._describe()} "
            "(mode='none'): a replay answers from the tape and sends nothing, and no byte was sent. "
            "Decorate that call with @tool or @model_call so the tape answers it, or allow the host: "
            f"replay(..., allow_hosts=[{host!r}]) (loopback is allowed by default), or network='allow' to turn "
            "the guard off"
        )
        self._blocked(NetworkBlocked(message, host=host, port=port if isinstance(port, int) else None))


def _guard() -> NetworkGuard | None:
    session = current_replay.get()
    guard = getattr(session, "network_guard", None)
    return guard if isinstance(guard, NetworkGuard) else None


_lock = threading.Lock()
_active = 0
_saved: dict[str, Any] = {}


def _address(address: Any) -> tuple[str, object] | None:
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        return address[0], address[1]
    return None  # AF_UNIX paths and other families are local


def install() -> None:
    """Put the checks in place (counted: each ``install`` needs one ``uninstall``)."""
    global _active
    with _lock:
        _active += 1
        if _active > 1:
            return
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo
        _saved.update(
            connect=socket.socket.__dict__.get("connect"),
            connect_ex=socket.socket.__dict__.get("connect_ex"),
            getaddrinfo=real_getaddrinfo,
        )

        def connect(self: socket.socket, address: Any) -> None:
            guard = _guard()
            target = _address(address) if guard is not None else None
            if guard is not None and target is not None:
                guard.check(*target)
            return real_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            guard = _guard()
            target = _address(address) if guard is not None else None
            if guard is not None and target is not None:
                guard.check(*target)
            return real_connect_ex(self, address)

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            guard = _guard()
            if guard is None or host is None:
                return real_getaddrinfo(host, port, *args, **kwargs)
            name = host.decode("idna") if isinstance(host, bytes) else str(host)
            guard.check(name, port)
            infos = real_getaddrinfo(host, port, *args, **kwargs)
            guard.learn(infos)
            return infos

        setattr(socket.socket, "connect", connect)  # noqa: B010 (patching a class attribute on purpose)
        setattr(socket.socket, "connect_ex", connect_ex)  # noqa: B010
        socket.getaddrinfo = getaddrinfo


def uninstall() -> None:
    """Take the checks away when the last guarded replay ends."""
    global _active
    with _lock:
        _active -= 1
        if _active > 0:
            return
        _active = 0
        for name in ("connect", "connect_ex"):
            original = _saved.get(name)
            if original is None:
                if name in socket.socket.__dict__:
                    delattr(socket.socket, name)
            else:
                setattr(socket.socket, name, original)
        socket.getaddrinfo = _saved["getaddrinfo"]
        _saved.clear()


def installed() -> bool:
    """Whether the checks are in place now."""
    with _lock:
        return _active > 0
