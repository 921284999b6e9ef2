"""A real TCP server on 127.0.0.1 that counts the connections it accepts and answers HTTP 200."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Counted:
    """Connections accepted and bytes received so far."""

    port: int
    connections: int = 0
    received: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


@contextmanager
def counting_server() -> Iterator[Counted]:
    """Listen on a free loopback port; every accepted connection is counted and answered ``ok``."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    counted = Counted(port=listener.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            with counted.lock:
                counted.connections += 1
            with conn:
                conn.settimeout(1.0)
                try:
                    data = conn.recv(65536)
                    with counted.lock:
                        counted.received += len(data)
                    if data:
                        conn.sendall(_ANSWER)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield counted
    finally:
        stop.set()
        thread.join(2)
        listener.close()
