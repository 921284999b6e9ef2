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

import contextvars
import http.client
import io
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import _activation
from .._context import replaying, suppressed
from .._exchange import Exchange, intercept, response_result
from .._request import Request
from .._wire import check_result
from . import _http11 as http11
from ._http11 import DROPPED, TapeSocket, Tee, decoded, head, response_bytes

_PENDING = "_agent_replay_pending"
_going_live: contextvars.ContextVar[bool] = contextvars.ContextVar("agent_replay_http_client_live", default=False)
_handed: contextvars.ContextVar[tuple[dict[str, Any] | None, bool] | None] = contextvars.ContextVar(
    "agent_replay_http_client_handed", default=None
)


@contextmanager
def passing(result: dict[str, Any] | None = None, pace: bool = False) -> Iterator[None]:
    """A capture point above this one (requests' adapter) already decided the request sent here: with
    no ``result`` it goes out live, untouched; with one, that recorded answer is read back (nothing sent)."""
    token = _handed.set((result, pace))
    try:
        yield
    finally:
        _handed.reset(token)


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
    if _going_live.get() or _activation.settings() is None or suppressed():
        return False
    handed = _handed.get()
    if handed is not None:
        return handed[0] is not None
    session = replaying()
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


def parse_request(conn: Any, raw: bytes) -> Request | None:
    """The request a connection wrote, from its bytes (None if they are not an HTTP/1.x request)."""
    host, port = _destination(conn)
    return http11.parse_request(raw, _scheme(conn), host, port)


# --- the response given back -----------------------------------------------------------------------


def _respond(conn: Any, getresponse: Callable[..., Any], reader: io.BufferedReader) -> Any:
    """The connection's own ``getresponse`` reading ``reader`` instead of its socket (put back after)."""
    saved = conn.sock
    conn.sock = TapeSocket(reader)
    try:
        return getresponse(conn)
    finally:
        conn.sock = None if isinstance(saved, (_Unplugged, TapeSocket)) else saved


def _again(conn: Any) -> None:
    """Let ``getresponse`` run once more for the same request (after a live answer was read)."""
    conn._HTTPConnection__state = http.client._CS_REQ_SENT  # type: ignore[attr-defined]
    conn._HTTPConnection__response = None


# --- the patched methods ---------------------------------------------------------------------------


def _putrequest(original: Callable[..., Any]) -> Callable[..., Any]:
    def putrequest(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        handed = _handed.get()
        if _activation.settings() is None or suppressed() or (handed is not None and handed[0] is None):
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
        raw = http11.as_bytes(data)
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
        handed = _handed.get()
        if handed is not None and handed[0] is not None:  # answered above: read the answer back
            if self.sock is pending.placeholder:
                self.sock = None
            return _respond(self, original, response_bytes(handed[0], handed[1]))
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
            content, _ = decoded(response.read(), response.getheader("content-encoding", ""))
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
        response.fp = Tee(response.fp, stream, bool(response.chunked), response.length)
        return response
    try:
        content = response.read()
    except BaseException as exc:
        exchange.fail(exc)
        raise
    body, plain = decoded(content, response.getheader("content-encoding", ""))
    exchange.finish(response.status, response.msg, body)
    # the client gets the same bytes again: decoded (without their content coding) when that was undone;
    # a response that has no body (HEAD, 1xx, 204, 304) keeps its headers as they were
    if conn._method == "HEAD" or response.status < 200 or response.status in (204, 304):
        kept = [(k, v) for k, v in response.msg.items() if k.lower() != "transfer-encoding"]
        data = head(response.status, kept)
    else:
        dropped = DROPPED if plain else DROPPED - {"content-encoding"}
        kept = [(k, v) for k, v in response.msg.items() if k.lower() not in dropped]
        data = head(response.status, [*kept, ("Content-Length", str(len(body)))]) + body
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


def patch() -> list[_activation.Restore]:
    """Patch ``http.client.HTTPConnection`` (every client on it: urllib, urllib3, requests, botocore)."""
    base = http.client.HTTPConnection
    send = base.__dict__["send"]
    return [
        _activation.replace(base, "putrequest", _putrequest),
        _activation.replace(base, "send", _send),
        _activation.replace(base, "getresponse", lambda original: _getresponse(original, send)),
    ]


def patch_urllib3() -> list[_activation.Restore]:
    """Patch urllib3's eager connects (``urllib3.connection`` and ``urllib3.connectionpool`` imported)."""
    connection, pool = sys.modules["urllib3.connection"], sys.modules["urllib3.connectionpool"]
    restores = []
    for cls in (connection.HTTPConnection, connection.HTTPSConnection):
        if "connect" in cls.__dict__:
            restores.append(_activation.replace(cls, "connect", _connect))
    if "_validate_conn" in pool.HTTPSConnectionPool.__dict__:
        restores.append(_activation.replace(pool.HTTPSConnectionPool, "_validate_conn", _validate_conn))
    return restores


_activation.register_client(patch)
_activation.register_client(patch_urllib3, needs=("urllib3.connection", "urllib3.connectionpool"))
