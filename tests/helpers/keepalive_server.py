"""A real HTTP/1.1 server on 127.0.0.1 that keeps connections alive and counts every byte it receives.

The clients' keep-alive pools reuse its connections, so a test can warm a pool before a replay and
see whether a request made during the replay reaches it. ``tls=`` serves HTTPS (a ``trustme`` CA).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_BODY = b'{"ok": true}'
_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY)


@dataclass
class KeepAlive:
    """What the server saw so far."""

    port: int
    connections: int = 0
    received: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self) -> tuple[int, int, int]:
        """(connections, bytes received, requests answered), read together."""
        with self.lock:
            return self.connections, self.received, self.requests


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip() or b"0")
    return 0


def _serve_connection(conn: socket.socket, counted: KeepAlive, tls: ssl.SSLContext | None) -> None:
    try:
        if tls is not None:
            conn = tls.wrap_socket(conn, server_side=True)
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = conn.recv(65536)
                if not data:
                    return
                with counted.lock:
                    counted.received += len(data)
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = _content_length(head)
            while len(buffer) < length:
                data = conn.recv(65536)
                if not data:
                    return
                with counted.lock:
                    counted.received += len(data)
                buffer += data
            buffer = buffer[length:]
            conn.sendall(_ANSWER)
            with counted.lock:
                counted.requests += 1
    except OSError:
        return
    finally:
        conn.close()


@contextmanager
def keepalive_server(tls: ssl.SSLContext | None = None) -> Iterator[KeepAlive]:
    """Listen on a free loopback port; answer every request ``{"ok": true}`` and keep the connection open."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    counted = KeepAlive(port=listener.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            conn.settimeout(5.0)
            with counted.lock:
                counted.connections += 1
            threading.Thread(target=_serve_connection, args=(conn, counted, tls), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield counted
    finally:
        stop.set()
        thread.join(2)
        listener.close()
