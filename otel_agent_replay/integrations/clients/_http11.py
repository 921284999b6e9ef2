"""HTTP/1.1 as bytes, for the ``http.client`` capture point: a request read back from what a client
wrote, a recorded result written as the response a live server would send (one chunk per recorded
event, paced if asked), and the tee that feeds a recorded stream while the client reads it.
"""

from __future__ import annotations

import contextlib
import http
import io
import time
from collections.abc import Iterable
from typing import Any

from otel_agent_replay.instrumentation import due_in

from .._codings import decode
from .._exchange import Stream
from .._request import Request
from .._wire import chunks, is_stream, offsets_ns, result_headers

DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"})
"""Headers that describe the bytes on the wire rather than the response: written anew."""


def as_bytes(data: Any) -> bytes:
    """What ``HTTPConnection.send`` would write for ``data``: bytes, a file's content, or an iterable's."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        out = bytearray()
        while block := data.read(8192):
            out += block.encode("iso-8859-1") if isinstance(block, str) else block
        return bytes(out)
    if isinstance(data, str):
        return data.encode("iso-8859-1")
    return b"".join(bytes(part) for part in data)


def _dechunk(body: bytes) -> bytes:
    """A body without its chunked transfer framing."""
    out = bytearray()
    at = 0
    while True:
        end = body.find(b"\r\n", at)
        if end < 0:
            return bytes(out)
        size = int(body[at:end].split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            return bytes(out)
        out += body[end + 2 : end + 2 + size]
        at = end + 2 + size + 2


def parse_request(raw: bytes, scheme: str, host: str, port: int | None) -> Request | None:
    """A request from the bytes a client wrote to ``scheme://host:port`` (None if they are not an HTTP/1.x
    request); an absolute-form target (through a proxy) names its own."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("iso-8859-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    method, target, _version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _dechunk(body)
    elif "content-length" in headers:
        with contextlib.suppress(ValueError):
            body = body[: int(headers["content-length"])]
    if "://" in target.split("?", 1)[0]:  # absolute form, through a proxy
        return Request.from_url(method, target, headers, body)
    path, _, query = target.partition("?")
    return Request(method.upper(), scheme, host, port, path or "/", query, headers, body)


# --- the response given back -----------------------------------------------------------------------


class _Parts(io.RawIOBase):
    """The bytes of a response, handed out one recorded part at a time (each when due, if paced)."""

    def __init__(self, parts: list[bytes], offsets: list[int] | None) -> None:
        self._parts = parts
        self._offsets = offsets  # ns from the first read, one per part (None: at once)
        self._index = 0
        self._at = 0
        self._start: int | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._index < len(self._parts) and self._at >= len(self._parts[self._index]):
            self._index += 1
            self._at = 0
        if self._index >= len(self._parts):
            return 0
        if self._offsets is not None and self._at == 0:
            if self._start is None:
                self._start = time.monotonic_ns()
            wait = due_in(self._start, self._offsets[self._index]) if self._index < len(self._offsets) else 0.0
            if wait > 0:
                time.sleep(wait)
        part = self._parts[self._index]
        n = min(len(buffer), len(part) - self._at)
        buffer[:n] = part[self._at : self._at + n]
        self._at += n
        return n


class TapeSocket:
    """What ``HTTPResponse`` reads a replayed response from (it only calls ``makefile``)."""

    def __init__(self, reader: io.BufferedReader) -> None:
        self._reader = reader

    def makefile(self, *_args: object, **_kwargs: object) -> io.BufferedReader:
        return self._reader

    def close(self) -> None:
        pass


def head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("iso-8859-1", "replace")


def response_bytes(result: dict[str, Any], pace: bool = False) -> io.BufferedReader:
    """The HTTP/1.1 bytes of a recorded result, as a reader a ``HTTPResponse`` parses."""
    headers = [(k, v) for k, v in result_headers(result).items() if k.lower() not in DROPPED]
    parts = chunks(result)
    if not is_stream(result):
        body = b"".join(parts)
        data = head(result["status"], [*headers, ("Content-Length", str(len(body)))]) + body
        return io.BufferedReader(io.BytesIO(data))
    framed = [b"%x\r\n%b\r\n" % (len(p), p) for p in parts if p]
    start = head(result["status"], [*headers, ("Transfer-Encoding", "chunked")])
    if not pace:
        return io.BufferedReader(io.BytesIO(start + b"".join(framed) + b"0\r\n\r\n"))
    offsets = offsets_ns(result)
    timed = [0, *(o for o, p in zip(offsets, parts, strict=False) if p), offsets[-1] if offsets else 0]
    return io.BufferedReader(_Parts([start, *framed, b"0\r\n\r\n"], timed))


def decoded(content: bytes, encoding: str) -> tuple[bytes, bool]:
    """A body without its content codings (gzip, deflate, br, zstd), and whether they were undone."""
    return decode(content, encoding)


# --- the stream recorded as it passes ------------------------------------------------------------


class _Dechunker:
    """Undoes chunked transfer framing incrementally; says when the last chunk went by."""

    def __init__(self) -> None:
        self._pending = b""
        self._left = 0  # data bytes of the current chunk still to come
        self._crlf = 0  # bytes of the CRLF after a chunk's data still to skip
        self.done = False

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        at = 0
        while at < len(data) and not self.done:
            if self._left:
                take = min(self._left, len(data) - at)
                out += data[at : at + take]
                self._left -= take
                at += take
                if not self._left:
                    self._crlf = 2
            elif self._crlf:
                skip = min(self._crlf, len(data) - at)
                self._crlf -= skip
                at += skip
            else:
                end = data.find(b"\n", at)
                if end < 0:
                    self._pending += data[at:]
                    break
                line = self._pending + data[at:end]
                self._pending = b""
                at = end + 1
                try:
                    self._left = int(line.split(b";", 1)[0].strip() or b"0", 16)
                except ValueError:
                    self._left = 0
                if not self._left:
                    self.done = True
        return bytes(out)


class Tee:
    """A live response's file: whatever the client reads passes to it unchanged and, without its
    transfer framing, to the step's ``Stream``; the step ends when the body ends or the file closes."""

    def __init__(self, inner: Any, stream: Stream, chunked: bool, length: int | None) -> None:
        self._inner = inner
        self._stream = stream
        self._chunks = _Dechunker() if chunked else None
        self._left = length

    def _seen(self, data: bytes) -> bytes:
        if data:
            if self._chunks is not None:
                body = self._chunks.feed(data)
                if body:
                    self._stream.feed(body)
                if self._chunks.done:
                    self._stream.close()
            else:
                self._stream.feed(data)
                if self._left is not None:
                    self._left -= len(data)
                    if self._left <= 0:
                        self._stream.close()
        else:
            self._stream.close()
        return data

    def read(self, n: int = -1) -> bytes:
        return self._seen(self._inner.read(n))

    def read1(self, n: int = -1) -> bytes:
        return self._seen(self._inner.read1(n))

    def readline(self, limit: int = -1) -> bytes:
        return self._seen(self._inner.readline(limit))

    def readinto(self, buffer: Any) -> int:
        n = int(self._inner.readinto(buffer))
        self._seen(bytes(memoryview(buffer)[:n]))
        return n

    def peek(self, n: int = 0) -> bytes:
        return bytes(self._inner.peek(n))

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._stream.close()

    @property
    def closed(self) -> bool:
        return bool(self._inner.closed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
