"""The seal's last edges below HTTP: UNIX-domain sockets (new, connected before the replay, datagrams,
abstract names) refused unless ``allow_sockets=`` names the path, and the send paths that bypass the
socket class's methods (the C class's methods called unbound, a ``__wrapped__`` original). Each case
against a real sink that counts the bytes it receives; each refusal counted in ``blocked_connections``.
"""

from __future__ import annotations

import _socket
import contextlib
import inspect
import json
import os
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.keepalive_server import KeepAlive, keepalive_server
from helpers.pinged import ping, ping_tape

from otel_agent_replay import ConfigurationError, NetworkBlocked, ReplayWarning, agent_run, replay


@pytest.fixture
def recorded(tape: Path) -> Path:
    return ping_tape(tape)


@dataclass
class Sink:
    """A UNIX-domain stream server that counts connections and bytes; ``path`` is where it listens."""

    path: str
    connections: int = 0
    received: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self) -> tuple[int, int]:
        time.sleep(0.1)  # bytes in flight would have arrived by now
        with self.lock:
            return self.connections, self.received


@contextlib.contextmanager
def unix_sink(path: str) -> Iterator[Sink]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    listener.settimeout(0.05)
    sink = Sink(path)
    stop = threading.Event()

    def read(conn: socket.socket) -> None:
        with conn:
            while (data := conn.recv(65536)) != b"":
                with sink.lock:
                    sink.received += len(data)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(None)
            with sink.lock:
                sink.connections += 1
            threading.Thread(target=read, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        stop.set()
        thread.join(2)
        listener.close()


@pytest.fixture
def folder() -> Iterator[Path]:
    """A short folder for socket paths (a UNIX-domain path has at most 107 bytes; pytest's are long)."""
    made = Path(tempfile.mkdtemp(prefix="sock", dir="/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def sink(folder: Path) -> Iterator[Sink]:
    with unix_sink(str(folder / "sink.sock")) as served:
        yield served


@contextlib.contextmanager
def sealed(tape: Path, **options: Any) -> Iterator[Any]:
    """A strict replay with ``allow_hosts=[]`` and the HTTP capture off; its end must raise NetworkBlocked."""
    with pytest.raises(NetworkBlocked), replay(tape, http=False, allow_hosts=[], **options) as session, agent_run("a"):
        ping()
        yield session


def _connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock


# --- UNIX-domain sockets -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["connect", "connect_ex", "C class"])
def test_a_new_unix_connection_is_refused(recorded: Path, sink: Sink, how: str) -> None:
    sock = (_socket.socket if how == "C class" else socket.socket)(socket.AF_UNIX, socket.SOCK_STREAM)
    with sealed(recorded) as session, pytest.raises(NetworkBlocked) as caught:
        if how == "connect_ex":
            sock.connect_ex(sink.path)
        else:
            sock.connect(sink.path)
    sock.close()
    assert sink.seen() == (0, 0)
    assert caught.value.host == sink.path and "allow_sockets=[" in str(caught.value)
    assert session.stats.blocked_connections == 1


SENDS: dict[str, Callable[[socket.socket, bytes], object]] = {
    "send": lambda sock, data: sock.send(data),
    "sendall": lambda sock, data: sock.sendall(data),
    "sendmsg": lambda sock, data: sock.sendmsg([data]),
    "makefile": lambda sock, data: sock.makefile("wb", buffering=0).write(data),
    "_socket.socket.send unbound": lambda sock, data: _socket.socket.send(sock, data),
    "socket.SocketType.sendall unbound": lambda sock, data: socket.SocketType.sendall(sock, data),
    "inspect.unwrap(socket.socket.send)": lambda sock, data: inspect.unwrap(socket.socket.send)(sock, data),
}


@pytest.mark.parametrize("send", list(SENDS))
def test_a_unix_connection_made_before_the_replay_carries_no_byte(recorded: Path, sink: Sink, send: str) -> None:
    with _connect(sink.path) as sock:
        SENDS[send](sock, b"before")  # before the replay: it goes out
        before = sink.seen()
        assert before == (1, 6)
        with sealed(recorded) as session, pytest.raises(NetworkBlocked) as caught:
            SENDS[send](sock, b"during")
        assert sink.seen() == before
    assert "opened before the replay" in str(caught.value) and caught.value.host == sink.path
    assert session.stats.blocked_connections == 1


def test_a_unix_datagram_goes_nowhere(recorded: Path, folder: Path) -> None:
    path = str(folder / "dgram.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(path)
        listener.settimeout(0.2)
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sender.sendto(b"before", path)
        assert listener.recv(100) == b"before"
        with sealed(recorded) as session, pytest.raises(NetworkBlocked):
            sender.sendto(b"during", path)
        sender.close()
        with pytest.raises(TimeoutError):
            listener.recv(100)
    assert session.stats.blocked_connections == 1


def test_an_abstract_unix_name_is_refused_unless_named(recorded: Path) -> None:
    name = f"\0agent-replay-test-{os.getpid()}"
    with unix_sink(name) as abstract:
        with sealed(recorded) as session, pytest.raises(NetworkBlocked):
            _connect(name)
        assert abstract.seen() == (0, 0) and session.stats.blocked_connections == 1
        with replay(recorded, http=False, allow_hosts=[], allow_sockets=[name]) as session, agent_run("a"):
            ping()
            with _connect(name) as sock:
                sock.sendall(b"named")
        assert abstract.seen() == (1, 5)
    assert session.stats.blocked_connections == 0 and session.stats.loopback_connections == 1


def test_a_path_named_in_allow_sockets_goes_through_counted_and_unwarned(recorded: Path, sink: Sink) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replay(recorded, http=False, allow_sockets=[Path(sink.path)]) as session, agent_run("a"):
            ping()
            with _connect(sink.path) as sock:
                sock.sendall(b"hello")
                sock.sendall(b"again")
    assert sink.seen() == (1, 10)
    assert session.stats.loopback_connections == 1 and session.stats.blocked_connections == 0
    assert not [w for w in caught if issubclass(w.category, ReplayWarning)]


def test_by_default_a_unix_socket_is_let_through_like_loopback_counted_and_warned_once(
    recorded: Path, sink: Sink
) -> None:
    with _connect(sink.path) as early:  # connected before the replay: counted at its first send
        with pytest.warns(ReplayWarning) as caught, replay(recorded, http=False) as session, agent_run("a"):
            ping()
            early.sendall(b"early")
            early.sendall(b"early")
            with _connect(sink.path) as sock:
                sock.sendall(b"new")
        assert sink.seen() == (2, 13)
    assert session.stats.loopback_connections == 2 and session.stats.blocked_connections == 0
    [message] = [str(w.message) for w in caught if "UNIX-domain" in str(w.message)]
    assert sink.path in message and "allow_sockets=[" in message and "allow_hosts=[]" in message


def test_an_unnamed_peer_is_local(recorded: Path) -> None:
    """A socketpair (asyncio's wake-up pipe is one) has no path: nothing to refuse or count."""
    left, right = socket.socketpair()
    with left, right:
        with replay(recorded, http=False, allow_hosts=[]) as session, agent_run("a"):
            ping()
            left.sendall(b"wake")
            _socket.socket.send(left, b"up")
        assert right.recv(10) == b"wakeup"
    assert session.stats.blocked_connections == 0 and session.stats.loopback_connections == 0


def test_allow_sockets_takes_paths_only() -> None:
    with pytest.raises(ConfigurationError, match="allow_sockets"):
        replay("never-read.jsonl", allow_sockets=[3])  # type: ignore[list-item]


# --- send paths that bypass socket.socket's methods, on a TCP connection ---------------------------


TCP_SENDS: dict[str, Callable[[Any, bytes], object]] = {
    "_socket.socket.send unbound": lambda sock, data: _socket.socket.send(sock, data),
    "_socket.socket.sendall unbound": lambda sock, data: _socket.socket.sendall(sock, data),
    "socket.SocketType.sendmsg unbound": lambda sock, data: socket.SocketType.sendmsg(sock, [data]),
    "inspect.unwrap(socket.socket.sendall)": lambda sock, data: inspect.unwrap(socket.socket.sendall)(sock, data),
}


def _settled(server: KeepAlive) -> tuple[int, int, int]:
    time.sleep(0.1)
    return server.seen()


@pytest.mark.parametrize("send", list(TCP_SENDS))
def test_a_tcp_connection_made_before_the_replay_carries_no_byte_by_any_send_path(recorded: Path, send: str) -> None:
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    with keepalive_server() as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        TCP_SENDS[send](sock, request)  # before the replay: it goes out
        sock.recv(1000)
        before = _settled(server)
        assert before == (1, len(request), 1)
        with (
            pytest.raises(NetworkBlocked),
            replay(recorded, http=False, allow_hosts=[]) as session,
            agent_run("a"),
            pytest.raises(NetworkBlocked) as caught,
        ):
            ping()
            TCP_SENDS[send](sock, request)
        assert _settled(server) == before
    assert caught.value.port == server.port and session.stats.blocked_connections == 1


def test_no_send_wrapper_hands_out_its_original() -> None:
    with replay_active():
        for cls, names in ((socket.socket, ("send", "sendall", "sendto", "sendmsg", "sendfile")),):
            for name in names:
                assert not hasattr(getattr(cls, name), "__wrapped__"), name
        for name in ("send", "write", "do_handshake"):
            assert not hasattr(getattr(ssl.SSLSocket, name), "__wrapped__"), name
        assert not hasattr(_socket.socket.send, "__wrapped__")


@contextlib.contextmanager
def replay_active() -> Iterator[None]:
    with tempfile.TemporaryDirectory() as folder:
        tape = ping_tape(Path(folder) / "t.jsonl")
        with replay(tape, http=False, allow_hosts=[]), agent_run("a"):
            ping()
            yield


def test_the_c_class_stand_in_is_the_c_class_for_every_other_use() -> None:
    real = _socket.socket
    with replay_active():
        assert _socket.socket is not real and socket.SocketType is not real
        raw = _socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # built as before
        with socket.socket() as python_class:
            assert type(raw) is real and isinstance(raw, _socket.socket) and isinstance(python_class, _socket.socket)
        assert issubclass(socket.socket, _socket.socket) and _socket.socket == real
        assert _socket.socket.__name__ == "socket" and _socket.socket.family is real.family

        class Mine(_socket.socket):  # a class built on it during the replay is built on the C class
            pass

        assert Mine.__mro__[1] is real
        mine = Mine(socket.AF_INET, socket.SOCK_STREAM)
        assert isinstance(mine, real)
        mine.close()
        raw.close()
    assert _socket.socket is real and socket.SocketType is real


# --- name resolution against a real resolver ---------------------------------------------------------


RESOLVER = Path(__file__).parent / "sealed_resolver.py"


def test_no_resolver_call_sends_a_query(recorded: Path, folder: Path) -> None:
    """In a network namespace of its own (``unshare``: root here, as in CI) whose resolver is a DNS sink on
    127.0.0.1:53: outside a replay each call's query reaches the sink; inside a strict replay with
    ``allow_hosts=[]`` each is refused and the sink receives not one byte."""
    resolv_conf = folder / "resolv.conf"
    resolv_conf.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n", encoding="utf-8")
    script = (
        f"ip link set lo up && mount --bind {shlex.quote(str(resolv_conf))} /etc/resolv.conf && "
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(RESOLVER))} {shlex.quote(str(folder / 't.jsonl'))}"
    )
    done = subprocess.run(["unshare", "-mn", "sh", "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    calls = list(found["outside"])
    assert len(calls) == 6 and all(found["outside"][name] > 0 for name in calls), found  # the sink is the resolver
    assert found["inside"] == dict.fromkeys(calls, 0)  # not one byte of a query during the replay
    assert found["refused"] == calls and found["blocked_connections"] == len(calls)
    assert found["ended"] == "the agent's code tried to connect to agent.example.test:443"  # the first, kept
