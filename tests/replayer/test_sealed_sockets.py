"""The socket guard watches sending too: a connection opened before a strict replay, TCP Fast Open and
the C-level ``_socket.socket`` carry no byte out to a host that is not allowed.

The fake servers are on loopback, so ``allow_hosts=[]`` makes them "not allowed"; ``http=False``
takes the HTTP capture (which would answer from the tape before any socket) out of the way.
"""

from __future__ import annotations

import _socket
import asyncio
import contextlib
import io
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
import trustme
import urllib3
from helpers.keepalive_server import KeepAlive, keepalive_server
from helpers.pinged import ping, ping_tape

from otel_agent_replay import NetworkBlocked, agent_run, replay


@pytest.fixture
def recorded(tape: Path) -> Path:
    return ping_tape(tape)


@contextlib.contextmanager
def sealed(tape: Path) -> Iterator[Any]:
    """A strict replay that allows no host at all, the HTTP capture off; its end must raise NetworkBlocked."""
    with pytest.raises(NetworkBlocked) as ended, replay(tape, http=False, allow_hosts=[]) as session, agent_run("a"):
        ping()
        yield session
    assert ended.value.host == "127.0.0.1"


def _settled(server: KeepAlive) -> tuple[int, int, int]:
    time.sleep(0.1)  # bytes in flight would have arrived by now
    return server.seen()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_server(ca: trustme.CA) -> Iterator[tuple[KeepAlive, ssl.SSLContext]]:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    with keepalive_server(tls=server_context) as server:
        yield server, client_context


# --- keep-alive pools warmed before the replay ------------------------------------------------


def _sync_pools(client_tls: ssl.SSLContext | None, ca_file: str | None) -> dict[str, Callable[[], Any]]:
    """Each a factory: the pool's ``close``, and a ``get(url)`` through it."""

    def with_requests() -> Any:
        session = requests.Session()
        return session.close, lambda url: session.get(url, timeout=2, verify=ca_file or True)

    def with_urllib3() -> Any:
        pool = urllib3.PoolManager(ssl_context=client_tls) if client_tls else urllib3.PoolManager()
        return pool.clear, lambda url: pool.request("GET", url, timeout=2)

    def with_httpx() -> Any:
        client = httpx.Client(verify=client_tls) if client_tls else httpx.Client()
        return client.close, lambda url: client.get(url, timeout=2)

    return {"requests.Session": with_requests, "urllib3.PoolManager": with_urllib3, "httpx.Client": with_httpx}


@pytest.mark.parametrize("pool", ["requests.Session", "urllib3.PoolManager", "httpx.Client"])
def test_a_pool_warmed_before_the_replay_sends_nothing(recorded: Path, pool: str) -> None:
    with keepalive_server() as server:
        close, get = _sync_pools(None, None)[pool]()
        url = f"http://127.0.0.1:{server.port}/v1/search"
        get(url)
        get(url)  # the pool reuses its connection
        before = _settled(server)
        assert before[0] == 1 and before[2] == 2
        with sealed(recorded) as session, pytest.raises(NetworkBlocked) as caught:
            get(url)
        assert _settled(server) == before  # no new connection, not one byte
        close()
    assert "opened before the replay" in str(caught.value) and caught.value.port == server.port
    assert session.stats.blocked_connections == 1


@pytest.mark.parametrize("pool", ["requests.Session", "urllib3.PoolManager", "httpx.Client"])
def test_a_tls_pool_warmed_before_the_replay_sends_nothing(
    recorded: Path, pool: str, tls_server: tuple[KeepAlive, ssl.SSLContext], ca: trustme.CA
) -> None:
    server, client_tls = tls_server
    with ca.cert_pem.tempfile() as ca_file:
        close, get = _sync_pools(client_tls, ca_file)[pool]()
        url = f"https://127.0.0.1:{server.port}/v1/search"
        get(url)
        before = _settled(server)
        assert before[0] == 1 and before[2] == 1
        with sealed(recorded) as session, pytest.raises(NetworkBlocked) as caught:
            get(url)
        assert _settled(server) == before
        close()
    assert "opened before the replay" in str(caught.value)
    assert session.stats.blocked_connections == 1


async def _async_get(pool: str, url: str) -> Callable[[], Any]:
    """A warmed async client's next ``get``, and its closing."""
    if pool == "httpx.AsyncClient":
        client = httpx.AsyncClient()
        await client.get(url, timeout=2)

        async def get_httpx() -> Any:
            try:
                return await client.get(url, timeout=2)
            finally:
                await client.aclose()

        return get_httpx
    session = aiohttp.ClientSession()
    async with session.get(url) as response:
        await response.read()

    async def get_aiohttp() -> Any:
        try:
            async with session.get(url) as again:
                return await again.read()
        finally:
            await session.close()

    return get_aiohttp


@pytest.mark.parametrize("pool", ["httpx.AsyncClient", "aiohttp.ClientSession"])
def test_an_async_pool_warmed_before_the_replay_sends_nothing(recorded: Path, pool: str) -> None:
    async def scenario(server: KeepAlive) -> tuple[int, int, int]:
        get = await _async_get(pool, f"http://127.0.0.1:{server.port}/v1/search")
        before = _settled(server)
        assert before[0] == 1 and before[2] == 1
        # asyncio's transport takes the guard's error for a broken connection: the client raises its own
        # error, and the replay still fails with NetworkBlocked at its end
        with sealed(recorded) as session, pytest.raises(Exception):  # noqa: B017 (each client its own type)
            await get()
        assert session.stats.blocked_connections == 1
        return before

    with keepalive_server() as server:
        before = asyncio.run(scenario(server))
        assert _settled(server) == before


# --- every send path of a connected socket ---------------------------------------------------

SENDS: dict[str, Callable[[socket.socket, bytes], object]] = {
    "send": lambda sock, data: sock.send(data),
    "sendall": lambda sock, data: sock.sendall(data),
    "sendmsg": lambda sock, data: sock.sendmsg([data]),
    "sendfile": lambda sock, data: sock.sendfile(io.BytesIO(data)),
    "sendfile (os.sendfile)": lambda sock, data: sock.sendfile(_file_of(data)),
    "makefile": lambda sock, data: sock.makefile("wb", buffering=0).write(data),
}


def _file_of(data: bytes) -> Any:
    """A regular file holding ``data`` (``sendfile`` hands it to the kernel's ``os.sendfile``)."""
    file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the test's end; sendfile reads it)
    file.write(data)
    file.seek(0)
    return file


@pytest.mark.parametrize("send", list(SENDS))
def test_a_raw_connection_opened_before_the_replay_sends_nothing(recorded: Path, send: str) -> None:
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    with keepalive_server() as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        SENDS[send](sock, request)  # before the replay: it goes out
        sock.recv(1000)
        before = _settled(server)
        assert before == (1, len(request), 1)
        with sealed(recorded) as session, pytest.raises(NetworkBlocked):
            SENDS[send](sock, request)
        assert _settled(server) == before
    assert session.stats.blocked_connections == 1


def test_a_thread_outside_the_replay_still_sends_on_its_pool(recorded: Path) -> None:
    with keepalive_server() as server:
        pooled = requests.Session()
        url = f"http://127.0.0.1:{server.port}/"
        pooled.get(url, timeout=2)
        go, done = threading.Event(), threading.Event()
        statuses: list[int] = []

        def exporter() -> None:  # started before the replay: no replay in its context
            go.wait(5)
            statuses.append(pooled.get(url, timeout=2).status_code)
            done.set()

        thread = threading.Thread(target=exporter, daemon=True)
        thread.start()
        with replay(recorded, http=False, allow_hosts=[]) as session, agent_run("a"):
            ping()
            go.set()
            assert done.wait(5)
        thread.join(2)
        pooled.close()
    assert statuses == [200] and session.stats.blocked_connections == 0


# --- TCP Fast Open and the C-level socket class ----------------------------------------------


def _fast_open(sock: Any, port: int) -> None:
    sock.sendto(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", socket.MSG_FASTOPEN, ("127.0.0.1", port))


@pytest.mark.parametrize("cls", [socket.socket, _socket.socket], ids=["socket.socket", "_socket.socket"])
def test_tcp_fast_open_sends_nothing(recorded: Path, cls: type[Any]) -> None:
    with keepalive_server() as server:
        control = cls(socket.AF_INET, socket.SOCK_STREAM)
        _fast_open(control, server.port)  # outside a replay the data goes out with the handshake
        control.recv(1000)
        control.close()
        before = _settled(server)
        assert before[0] == 1 and before[2] == 1
        sock = cls(socket.AF_INET, socket.SOCK_STREAM)
        with sealed(recorded) as session, pytest.raises(NetworkBlocked):
            _fast_open(sock, server.port)
        sock.close()
        assert _settled(server) == before
    assert session.stats.blocked_connections == 1


C_LEVEL: dict[str, Callable[[Any, int], object]] = {
    "connect": lambda sock, port: sock.connect(("127.0.0.1", port)),
    "connect_ex": lambda sock, port: sock.connect_ex(("127.0.0.1", port)),
    "sendmsg with an address": lambda sock, port: sock.sendmsg([b"x"], [], socket.MSG_FASTOPEN, ("127.0.0.1", port)),
}


@pytest.mark.parametrize("how", list(C_LEVEL))
def test_the_c_level_socket_class_connects_nowhere(recorded: Path, how: str) -> None:
    assert not issubclass(_socket.socket, socket.socket)  # none of socket.socket's Python methods
    with keepalive_server() as server:
        sock = _socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with sealed(recorded) as session, pytest.raises(NetworkBlocked):
            C_LEVEL[how](sock, server.port)
        sock.close()
        assert _settled(server) == (0, 0, 0)
    assert session.stats.blocked_connections == 1


def test_a_datagram_goes_nowhere(recorded: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.settimeout(0.2)
        target = listener.getsockname()
        sender = _socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sender.sendto(b"before", target)
        assert listener.recv(100) == b"before"
        with sealed(recorded) as session, pytest.raises(NetworkBlocked):
            sender.sendto(b"during", target)
        sender.close()
        with pytest.raises(TimeoutError):
            listener.recv(100)
    assert session.stats.blocked_connections == 1
