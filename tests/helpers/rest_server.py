"""A small REST API on 127.0.0.1 (JSON, text and binary answers) that counts every request and byte it receives.

Routes: ``GET /items`` (the query echoed, JSON), ``GET /image`` (binary bytes that are not UTF-8),
``POST /orders`` (the JSON body echoed with an id), ``POST /search`` (a read-only search behind POST),
anything else 404. The ``X-Served`` header counts the requests, so a replayed answer shows which live
one it was recorded from.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from helpers.loopback import serve_on_loopback

IMAGE = bytes(range(256)) * 4


@dataclass
class RestApi:
    url: str
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def authority(self) -> str:
        """``127.0.0.1:PORT``, as an HTTP step's tool name spells it."""
        return self.url.removeprefix("http://")


def _handler(api: RestApi) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            with api.lock:
                served = len(api.requests)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Served", str(served))
            self.send_header("Set-Cookie", "session=s3cr3t-cookie-value; HttpOnly")
            self.end_headers()
            self.wfile.write(body)

        def _take(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with api.lock:
                api.requests.append((self.command, self.path, dict(self.headers.items()), body))
            return body

        def do_GET(self) -> None:
            self._take()
            parts = urllib.parse.urlsplit(self.path)
            if parts.path == "/items":
                query = dict(urllib.parse.parse_qsl(parts.query))
                payload = {"items": [{"id": "i-1", "name": "lamp"}, {"id": "i-2", "name": "desk"}], "query": query}
                self._answer(200, json.dumps(payload).encode(), "application/json")
            elif parts.path == "/image":
                self._answer(200, IMAGE, "image/png")
            else:
                self._answer(404, b'{"error": "not found"}', "application/json")

        def do_POST(self) -> None:
            body = self._take()
            path = urllib.parse.urlsplit(self.path).path
            if path == "/orders":
                order = json.loads(body or b"{}")
                self._answer(201, json.dumps({"id": "o-77", **order}).encode(), "application/json")
            elif path == "/search":
                self._answer(200, json.dumps({"hits": [json.loads(body or b"{}")]}).encode(), "application/json")
            else:
                self._answer(404, b'{"error": "not found"}', "application/json")

    return Handler


@contextmanager
def rest_api() -> Iterator[RestApi]:
    """Serve the REST API on a free loopback port."""
    api = RestApi("")
    with serve_on_loopback(_handler(api)) as url:
        api.url = url
        yield api
