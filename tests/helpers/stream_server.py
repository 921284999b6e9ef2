"""A small HTTP server on 127.0.0.1 that streams: server-sent events, newline-delimited JSON, a gzipped
JSON body and a redirect; every request is counted with its body.

Routes (all ``GET``): ``/events`` (``text/event-stream``, ``EVENTS`` events written apart, each
flushed on its own), ``/lines`` (``application/x-ndjson``, ``LINES`` lines, likewise), ``/gzip``
(``GZIPPED`` as ``Content-Encoding: gzip``), ``/moved`` (a 302 to ``/gzip``); anything else 404.
``?gap=`` sets the pause between two events in seconds (default 0.005).
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from helpers.loopback import serve_on_loopback

EVENTS = [f"id: {n}\nevent: tick\ndata: {json.dumps({'n': n, 'text': 'é' * n})}\n\n" for n in range(6)]
LINES = [json.dumps({"n": n, "done": n == 4}) + "\n" for n in range(5)]
GZIPPED = {"greeting": "hello", "items": list(range(50))}


@dataclass
class StreamServer:
    url: str
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(server: StreamServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _stream(self, content_type: str, parts: list[str], gap: float) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            for part in parts:
                time.sleep(gap)
                self.wfile.write(part.encode())
                self.wfile.flush()
            self.close_connection = True

        def _whole(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with server.lock:
                server.requests.append((self.command, self.path, body))
            parts = urllib.parse.urlsplit(self.path)
            gap = float(dict(urllib.parse.parse_qsl(parts.query)).get("gap", "0.005"))
            if parts.path == "/events":
                self._stream("text/event-stream; charset=utf-8", EVENTS, gap)
            elif parts.path == "/lines":
                self._stream("application/x-ndjson", LINES, gap)
            elif parts.path == "/gzip":
                packed = gzip.compress(json.dumps(GZIPPED).encode())
                self._whole(200, packed, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
            elif parts.path == "/moved":
                self._whole(302, b"", {"Location": "/gzip"})
            else:
                self._whole(404, b'{"error": "not found"}', {"Content-Type": "application/json"})

    return Handler


@contextmanager
def stream_server() -> Iterator[StreamServer]:
    """Serve the streams on a free loopback port."""
    server = StreamServer("")
    with serve_on_loopback(_handler(server)) as url:
        server.url = url
        yield server
