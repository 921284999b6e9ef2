"""The plumbing the fake model APIs share: an HTTP server on 127.0.0.1 that counts every request
(method, path, query, lower-cased headers, JSON body) and sends what a provider module answers.

A provider module (``gemini_server``, ``ollama_server``, ``cohere_server``) gives an ``answer``
function: a request in, a ``Reply`` out (a whole body, or chunks written and flushed one by one, as a
streaming API sends them).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Seen:
    """One request as the fake API received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Reply:
    """What to send back: a status, a content type, and the body whole or in chunks."""

    status: int
    content_type: str
    chunks: Iterable[bytes]
    streamed: bool = False
    """Chunks are flushed one by one, without a length (the connection closes after the last)."""
    headers: dict[str, str] = field(default_factory=dict)
    gap: float = 0.002
    """Seconds between the first few chunks of a stream, as from a model warming up."""


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None, compact: bool = False) -> Reply:
    """A whole JSON body (``compact``: no spaces, as Go servers write it)."""
    text = json.dumps(payload, separators=(",", ":")) if compact else json.dumps(payload)
    return Reply(status, "application/json; charset=utf-8", [text.encode()], headers=headers or {})


@dataclass
class FakeApi:
    """A running fake API: its base URL and every request it received."""

    url: str
    requests: list[Seen] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]


Answer = Callable[[Seen], Reply]


def _handler(api: FakeApi, answer: Answer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            body = json.loads(raw) if raw else None
            seen = Seen(self.command, path, query, {k.lower(): v for k, v in self.headers.items()}, body)
            api.requests.append(seen)
            reply = answer(seen)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if not reply.streamed:
                data = b"".join(reply.chunks)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Connection", "close")
            self.end_headers()
            for i, chunk in enumerate(reply.chunks):
                self.wfile.write(chunk)
                self.wfile.flush()
                if i < 5:
                    time.sleep(reply.gap)
            self.close_connection = True

        do_POST = _serve
        do_GET = _serve

    return Handler


@contextmanager
def serve_api(answer: Answer) -> Iterator[FakeApi]:
    """A fake API on a free loopback port for the block; stopped (port closed) after it."""
    api = FakeApi("")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(api, answer))
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()


def words(text: str) -> list[str]:
    """A text cut into words that join back to it (each but the last keeps its space)."""
    parts = text.split(" ")
    return [w if i == len(parts) - 1 else w + " " for i, w in enumerate(parts)]


def pieces(model: str, text: str) -> list[str]:
    """How a fake provider streams ``text``: in words, or for a model named ``tiny…`` in 4-character
    deltas (so a token in it is split across many events)."""
    if "tiny" in model:
        return [text[i : i + 4] for i in range(0, len(text), 4)]
    return words(text)
