"""An HTTP/1.1 keep-alive server on 127.0.0.1 that counts every request and every byte it receives.

Bytes are counted as the socket delivers them (before any parsing), so a test can prove that not a
single byte of a request reached the server, even on a connection opened before (a warmed pool).
"""

from __future__ import annotations

import http.server
import io
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Counter:
    """What a server saw: its base URL, each request (method, path, headers, body), bytes received."""

    url: str = ""
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    received: int = 0
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


class _CountingSocketIO(io.RawIOBase):
    def __init__(self, sock: socket.socket, counter: Counter) -> None:
        self._sock = sock
        self._counter = counter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            n = self._sock.recv_into(buffer)
        except OSError:
            return 0
        with self._counter.lock:
            self._counter.received += n
        return n


class CountingHandler(http.server.BaseHTTPRequestHandler):
    """A keep-alive handler whose input is counted; subclasses answer with ``reply``/``reply_json``."""

    protocol_version = "HTTP/1.1"
    counter: Counter

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        with self.counter.lock:
            self.counter.connections += 1
        self.rfile = io.BufferedReader(_CountingSocketIO(self.connection, self.counter))

    def body(self) -> bytes:
        """Read the request body and note the request."""
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.counter.lock:
            self.counter.requests.append((self.command, self.path, headers, data))
        return data

    def reply(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


@contextmanager
def counting_http(handler: type[CountingHandler]) -> Iterator[Counter]:
    """Serve ``handler`` on a free loopback port for the block, counting what arrives."""
    counter = Counter()
    bound = type(handler.__name__, (handler,), {"counter": counter})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), bound)
    server.daemon_threads = True
    counter.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield counter
    finally:
        server.shutdown()
        server.server_close()
