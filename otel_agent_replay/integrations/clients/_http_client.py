"""The standard library's ``http.client``: urllib.request, urllib3, requests and botocore.

Where it hooks. Every one of those clients ends in the methods of ``http.client.HTTPConnection``:
``putrequest`` starts a request, ``send`` writes its bytes (headers, then the body, chunk framing
included, whichever subclass built them: urllib3 writes the body itself, botocore joins it to the
headers), and ``getresponse`` reads the answer (urllib3's and botocore's own ``getresponse`` call
it through ``super()`` and wrap what it returns). Those three are patched on the base class itself,
so a connection created before the block (a warmed ``requests.Session`` or ``PoolManager`` pool,
holding an open socket) runs them too. Replacing the connection classes that pools instantiate (as
vcrpy does) would miss such a connection. urllib3's eager connect of HTTPS pools
(``HTTPSConnectionPool._validate_conn``) and its ``connect`` are held back in a sealed replay.

How a request is seen. ``putrequest`` marks the connection (only inside a block, outside an OTel
exporter's suppressed context); ``send`` copies the bytes the client writes: while recording
they also go out as usual, in a replay that answers the host they are held and nothing is sent (no
connect either). At ``getresponse`` the copied bytes are parsed back into a ``Request`` (request
line, headers, body after its ``Content-Length`` or chunked framing) and ``intercept`` decides.

How it answers. A replayed result becomes the bytes of an HTTP/1.1 response (status line, the
recorded headers, ``Content-Length`` for a body, ``Transfer-Encoding: chunked`` with one chunk per
recorded event for a stream) read by the connection's own ``response_class`` through the original
``getresponse``: urllib3, requests and botocore get a real ``http.client.HTTPResponse`` and parse
it as a live one (chunk by chunk, error statuses raising their own errors), and no socket is used.
A connection's own socket, if it had one, is put back untouched.

Recording reads a whole body at once (decoded from gzip/deflate), finishes the step and hands the
client a fresh response with the same bytes; a stream in a known framing reaches the client chunk by
chunk while a tee on the response's file feeds the step (undoing chunked framing as it goes).
"""

from __future__ import annotations

import contextlib
import contextvars
import http
import http.client
import importlib
import io
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from otel_agent_replay.instrumentation import due_in

from .. import _activation
from .._exchange import Exchange, Request, Stream, _replaying, _suppressed, intercept, response_result
from .._wire import check_result, chunks, is_stream, offsets_ns, result_headers

_PENDING = "_agent_replay_pending"
_going_live: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_replay_http_client_live", default=False)
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"})


# --- the request as it is written ------------------------------------------------------------------


class _Unplugged:
    """Stands in for the socket of a connection a sealed replay never opened (urllib3 sets timeouts
    on it and keeps its ``shutdown``); it sends and receives nothing."""

    def settimeout(self, _timeout: object) -> None:
        pass

    def gettimeout(self) -> None:
        return None

    def setsockopt(self, *_args: object) -> None:
        pass

    def shutdown(self, _how: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Pending:
    """One request being written on a connection: a copy of its bytes, and whether it is held back."""

    __slots__ = ("data", "placeholder", "sealed")

    def __init__(self, sealed: bool) -> None:
        self.sealed = sealed
        self.data = bytearray()
        self.placeholder: _Unplugged | None = None


def _sealed(conn: Any) -> bool:
    """Whether a request on this connection, in this context, is answered from the tape (a replay that
    does not let the host through): then nothing may be sent, nor a connection opened."""
    if _going_live.get() or _activation.settings() is None or _suppressed():
        return False
    session = _replaying()
    if session is None:
        return False
    options = getattr(session, "options", None)
    passes = getattr(options, "passes_through", None)
    host, port = _destination(conn)
    return not (passes is not None and passes(host, port))


def _destination(conn: Any) -> tuple[str, int | None]:
    tunnel = getattr(conn, "_tunnel_host", None)
    if tunnel:
        return str(tunnel).lower(), getattr(conn, "_tunnel_port", None)
    return str(conn.host).lower().strip("[]"), conn.port


def _scheme(conn: Any) -> str:
    if getattr(conn, "_tunnel_host", None) or isinstance(conn, http.client.HTTPSConnection):
        return "https"
    return "https" if getattr(conn, "default_port", None) == 443 else "http"


def _as_bytes(data: Any) -> bytes:
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


def parse_request(conn: Any, raw: bytes) -> Request | None:
    """The request a connection wrote, from its bytes (None if they are not an HTTP/1.x request)."""
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
    host, port = _destination(conn)
    return Request(method.upper(), _scheme(conn), host, port, path or "/", query, headers, body)


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


class _TapeSocket:
    """What ``HTTPResponse`` reads a replayed response from (it only calls ``makefile``)."""

    def __init__(self, reader: io.BufferedReader) -> None:
        self._reader = reader

    def makefile(self, *_args: object, **_kwargs: object) -> io.BufferedReader:
        return self._reader

    def close(self) -> None:
        pass


def _head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("iso-8859-1", "replace")


def response_bytes(result: dict[str, Any], pace: bool = False) -> io.BufferedReader:
    """The HTTP/1.1 bytes of a recorded result, as a reader a ``HTTPResponse`` parses."""
    headers = [(k, v) for k, v in result_headers(result).items() if k.lower() not in _DROPPED]
    parts = chunks(result)
    if not is_stream(result):
        body = b"".join(parts)
        data = _head(result["status"], [*headers, ("Content-Length", str(len(body)))]) + body
        return io.BufferedReader(io.BytesIO(data))
    framed = [b"%x\r\n%b\r\n" % (len(p), p) for p in parts if p]
    head = _head(result["status"], [*headers, ("Transfer-Encoding", "chunked")])
    if not pace:
        return io.BufferedReader(io.BytesIO(head + b"".join(framed) + b"0\r\n\r\n"))
    offsets = offsets_ns(result)
    timed = [0, *(o for o, p in zip(offsets, parts, strict=False) if p), offsets[-1] if offsets else 0]
    return io.BufferedReader(_Parts([head, *framed, b"0\r\n\r\n"], timed))


def _respond(conn: Any, getresponse: Callable[..., Any], reader: io.BufferedReader) -> Any:
    """The connection's own ``getresponse`` reading ``reader`` instead of its socket (put back after)."""
    saved = conn.sock
    conn.sock = _TapeSocket(reader)
    try:
        return getresponse(conn)
    finally:
        conn.sock = None if isinstance(saved, (_Unplugged, _TapeSocket)) else saved


def _again(conn: Any) -> None:
    """Let ``getresponse`` run once more for the same request (after a live answer was read)."""
    conn._HTTPConnection__state = http.client._CS_REQ_SENT  # type: ignore[attr-defined]
    conn._HTTPConnection__response = None


def _decoded(content: bytes, encoding: str) -> tuple[bytes, bool]:
    """A body without its gzip/deflate content coding (and whether it was undone)."""
    coding = encoding.strip().lower()
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(content, 16 + zlib.MAX_WBITS), True
        if coding == "deflate":
            try:
                return zlib.decompress(content), True
            except zlib.error:
                return zlib.decompress(content, -zlib.MAX_WBITS), True
    except zlib.error:
        return content, False
    return content, coding in ("", "identity")


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


class _Tee:
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


# --- the patched methods ---------------------------------------------------------------------------


def _putrequest(original: Callable[..., Any]) -> Callable[..., Any]:
    def putrequest(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if _activation.settings() is None or _suppressed():
            self.__dict__.pop(_PENDING, None)
            return result
        pending = _Pending(_sealed(self))
        if pending.sealed and self.sock is None:
            pending.placeholder = self.sock = _Unplugged()
        self.__dict__[_PENDING] = pending
        return result

    putrequest.__wrapped__ = original  # type: ignore[attr-defined]
    return putrequest


def _send(original: Callable[..., Any]) -> Callable[..., Any]:
    def send(self: Any, data: Any) -> Any:
        pending = self.__dict__.get(_PENDING)
        if pending is None:
            return original(self, data)
        raw = _as_bytes(data)
        pending.data += raw
        if pending.sealed:
            return None  # held: a replay sends nothing
        return original(self, raw)

    send.__wrapped__ = original  # type: ignore[attr-defined]
    return send


def _getresponse(original: Callable[..., Any], send: Callable[..., Any]) -> Callable[..., Any]:
    def getresponse(self: Any, *args: Any, **kwargs: Any) -> Any:
        pending = self.__dict__.pop(_PENDING, None)
        if pending is None:
            return original(self, *args, **kwargs)
        request = parse_request(self, bytes(pending.data))
        exchange = intercept(request) if request is not None else None
        if exchange is None:
            if pending.sealed:
                _go_live(self, pending, send)
            return original(self, *args, **kwargs)
        if exchange.replaying:
            return _answer(self, exchange, pending, original, send)
        return _record(self, exchange, original)

    getresponse.__wrapped__ = original  # type: ignore[attr-defined]
    return getresponse


def _go_live(conn: Any, pending: _Pending, send: Callable[..., Any]) -> None:
    """Send a held request for real (the replay lets it go live)."""
    if pending.placeholder is not None and conn.sock is pending.placeholder:
        conn.sock = None
    token = _going_live.set(True)
    try:
        send(conn, bytes(pending.data))
    finally:
        _going_live.reset(token)


def _answer(conn: Any, exchange: Exchange, pending: _Pending, original: Callable[..., Any], send: Any) -> Any:
    went_live = False

    def live() -> dict[str, Any]:
        nonlocal went_live
        went_live = True
        _go_live(conn, pending, send)
        token = _going_live.set(True)
        try:
            response = original(conn)
            content, _ = _decoded(response.read(), response.getheader("content-encoding", ""))
        finally:
            _going_live.reset(token)
        return response_result(response.status, response.msg, content)

    try:
        result = check_result(exchange.answer(live))
    except BaseException:
        if conn.sock is pending.placeholder:
            conn.sock = None
        raise
    if went_live:
        _again(conn)
    return _respond(conn, original, response_bytes(result, exchange.pace))


def _record(conn: Any, exchange: Exchange, original: Callable[..., Any]) -> Any:
    exchange.begin()
    try:
        response = original(conn)
    except BaseException as exc:
        exchange.fail(exc)
        raise
    exchange.sent()
    stream = exchange.stream(response.status, response.msg)
    if stream is not None:
        response.fp = _Tee(response.fp, stream, bool(response.chunked), response.length)
        return response
    try:
        content = response.read()
    except BaseException as exc:
        exchange.fail(exc)
        raise
    body, plain = _decoded(content, response.getheader("content-encoding", ""))
    exchange.finish(response.status, response.msg, body)
    # the client gets the same bytes again: decoded (without their content coding) when that was undone
    dropped = _DROPPED if plain else _DROPPED - {"content-encoding"}
    headers = [(k, v) for k, v in response.msg.items() if k.lower() not in dropped]
    data = _head(response.status, [*headers, ("Content-Length", str(len(body)))]) + body
    _again(conn)
    return _respond(conn, original, io.BufferedReader(io.BytesIO(data)))


def _validate_conn(original: Callable[..., Any]) -> Callable[..., Any]:
    def validate(self: Any, conn: Any) -> Any:
        if _sealed(conn):
            return None  # a sealed replay opens no connection (it is opened if the request goes live)
        return original(self, conn)

    validate.__wrapped__ = original  # type: ignore[attr-defined]
    return validate


def _connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _sealed(self):
            return None
        return original(self, *args, **kwargs)

    connect.__wrapped__ = original  # type: ignore[attr-defined]
    return connect


def _replace(owner: type, attr: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> _activation.Restore:
    original = owner.__dict__[attr]
    setattr(owner, attr, make(original))

    def restore() -> None:
        setattr(owner, attr, original)

    return restore


def patch() -> list[_activation.Restore]:
    """Patch ``http.client.HTTPConnection`` (every client on it) and urllib3's eager connects."""
    base = http.client.HTTPConnection
    send = base.__dict__["send"]
    restores = [
        _replace(base, "putrequest", _putrequest),
        _replace(base, "send", _send),
        _replace(base, "getresponse", lambda original: _getresponse(original, send)),
    ]
    try:
        connection = importlib.import_module("urllib3.connection")
        pool = importlib.import_module("urllib3.connectionpool")
    except ImportError:
        return restores
    for cls in (connection.HTTPConnection, connection.HTTPSConnection):
        if "connect" in cls.__dict__:
            restores.append(_replace(cls, "connect", _connect))
    if "_validate_conn" in pool.HTTPSConnectionPool.__dict__:
        restores.append(_replace(pool.HTTPSConnectionPool, "_validate_conn", _validate_conn))
    return restores


_activation.register_client(patch)
