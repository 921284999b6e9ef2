"""A small REST API on 127.0.0.1, the kind a tool calls: ``GET /items?q=...`` searches,
``POST /items`` creates (201), ``GET /report`` answers gzip-compressed JSON to a client that accepts it.
Deterministic answers; every request and byte counted."""

from __future__ import annotations

import gzip
import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager

from .counting_http import Counter, CountingHandler, counting_http

ITEMS = [{"id": i, "name": f"item {i}", "tags": ["a", "b"][: i % 3]} for i in range(1, 6)]


class _Rest(CountingHandler):
    def do_GET(self) -> None:
        self.body()
        parts = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        if parts.path == "/items":
            found = [item for item in ITEMS if query.get("q", "") in item["name"]]
            data = json.dumps({"items": found, "query": query.get("q", "")}).encode()
            self.reply(200, "application/json", data, {"ETag": '"v1"', "Set-Cookie": "session=server-secret"})
        elif parts.path == "/report" and "gzip" in self.headers.get("Accept-Encoding", ""):
            data = gzip.compress(json.dumps({"report": ITEMS}).encode(), mtime=0)
            self.reply(200, "application/json", data, {"Content-Encoding": "gzip"})
        else:
            self.reply(404, "application/json", b'{"error": "not found"}')

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        body = json.loads(self.body() or b"{}")
        created = {"id": 99, **body}
        self.reply(201, "application/json", json.dumps(created).encode(), {"Location": "/items/99"})


@contextmanager
def rest_server() -> Iterator[Counter]:
    """The REST API on a free loopback port for the block."""
    with counting_http(_Rest) as counter:
        yield counter
