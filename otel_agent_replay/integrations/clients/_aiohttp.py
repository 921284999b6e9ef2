"""aiohttp (async only): a client middleware added to each request, innermost, while a block is active.

aiohttp 3.12+ runs every request through a chain of client middlewares that ends in the function
that connects and sends. Inside a record or replay block, ``ClientSession._request`` is wrapped so
that its chain ends with ours: aiohttp itself has built the request by then (URL with its query,
headers with cookies and auth, the body as a payload), and whatever the user's own middlewares do
(sign, retry) happens as it would live. A request that is a step is recorded (a stream passes to
the caller through aiohttp's own reader, chunk by chunk, noted as it arrives) or answered with a
real ``ClientResponse`` built from the tape, without a connection: ``status``, ``headers``,
``read``/``text``/``json``, ``content`` with every way of reading it, ``raise_for_status``.
"""

from __future__ import annotations

import asyncio
import http
import inspect
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, NamedTuple

from otel_agent_replay.instrumentation import due_in

from .. import _activation
from .._exchange import Exchange, Stream, intercept, response_result
from .._request import Request
from .._wire import check_result, chunks, is_stream, offsets_ns, result_headers

_log = logging.getLogger(__name__)
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding"})
"""Headers that no longer describe a body read and decoded here (the caller gets the decoded bytes)."""
_DEFAULT_BUFSIZE = 2**16
_PHRASES = {status.value: status.phrase for status in http.HTTPStatus}


def patch() -> list[_activation.Restore]:
    """Wrap ``ClientSession._request`` (aiohttp 3.12 or later: client middlewares; ``aiohttp.client`` imported)."""
    session_cls = sys.modules["aiohttp.client"].ClientSession
    if not _accepts(session_cls, "middlewares"):
        _log.warning(
            "aiohttp %s has no client middlewares: its requests are not recorded or answered from the tape "
            "(the socket guard still sees them); install aiohttp 3.12 or later",
            getattr(sys.modules.get("aiohttp"), "__version__", "?"),
        )
        return []
    return [_activation.replace(session_cls, "_request", _wrapper)]


_activation.register_client(patch, needs=("aiohttp.client",))
_accepted: dict[tuple[type, str], bool] = {}


def _accepts(cls: type, argument: str) -> bool:
    """Whether this aiohttp's ``cls`` takes ``argument`` (asked once): ``ClientSession`` its
    ``middlewares`` (3.12+), ``ClientResponse`` the ``stream_writer`` 3.14 made required."""
    known = _accepted.get((cls, argument))
    if known is None:
        known = _accepted[(cls, argument)] = argument in inspect.signature(cls).parameters
    return known


def _wrapper(original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def _request(self: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        if _activation.settings() is not None:
            chain = kwargs.get("middlewares")
            if chain is None:
                chain = self._middlewares
            decompress = kwargs.get("auto_decompress")
            bufsize = kwargs.get("read_bufsize")
            capture = _Capture(
                self._auto_decompress if decompress is None else bool(decompress),
                (self._read_bufsize if bufsize is None else bufsize) or _DEFAULT_BUFSIZE,
            )
            kwargs["middlewares"] = (*chain, capture)
        return await original(self, method, str_or_url, **kwargs)

    _request.__wrapped__ = original  # type: ignore[attr-defined]
    return _request


async def _request_body(req: Any) -> bytes:
    """The body aiohttp is about to send, as bytes; the payload stays sendable (3.12+ payloads are
    reusable: a file is rewound, an async iterable's chunks are kept)."""
    body = req.body
    if not body:
        return b""
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return bytes(await body.as_bytes())


def _request(req: Any, body: bytes) -> Request:
    url = req.url
    return Request(
        str(req.method).upper(),
        str(url.scheme).lower(),
        str(url.host or "").lower(),
        url.explicit_port if url.explicit_port is not None else url.port,
        url.path or "/",
        url.raw_query_string,
        req.headers,  # a CIMultiDict: looked up by any case, as Request.headers is (no copy per request)
        body,
    )


class _Capture:
    """The middleware of one ``_request`` call (it knows how that call reads its response)."""

    __slots__ = ("_bufsize", "_decompress")

    def __init__(self, decompress: bool, bufsize: int) -> None:
        self._decompress = decompress
        self._bufsize = bufsize

    async def __call__(self, req: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if _activation.settings() is None or "upgrade" in req.headers:  # a WebSocket is not a request/response
            return await handler(req)
        exchange = intercept(_request(req, await _request_body(req)))
        if exchange is None:
            return await handler(req)
        if exchange.replaying:

            async def live() -> dict[str, Any]:
                response = await handler(req)
                try:
                    headers, content = await self._whole(response)
                finally:
                    response.release()
                return response_result(response.status, headers, content)

            result = await exchange.answer_async(live)
            return build_response(result, req, pace=exchange.pace, bufsize=self._bufsize)
        return await self._record(exchange, req, handler)

    async def _record(self, exchange: Exchange, req: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        exchange.begin()
        try:
            response = await handler(req)
        except BaseException as exc:
            exchange.fail(exc)
            raise
        exchange.sent()
        encoded = _encoding(response.headers)
        reader = response.content
        if encoded is None or self._decompress:
            # aiohttp hands the caller decoded bytes: the stream, if one, can be noted as it arrives
            headers = response.headers if encoded is None else _without(response.headers, ("content-encoding",))
            stream = exchange.stream(response.status, headers) if type(reader) is _readers().live else None
            if stream is not None:
                _record_stream(reader, stream)
                return response
        try:
            headers, content = await self._whole(response)
        except BaseException as exc:
            exchange.fail(exc)
            raise
        exchange.finish(response.status, headers, content)
        return _refilled(response, headers, content, self._bufsize)

    async def _whole(self, response: Any) -> tuple[Any, bytes]:
        """The whole body, decoded, with the headers that describe it."""
        content = await response.read()
        encoding = _encoding(response.headers)
        if encoding is None:
            return response.headers, content
        if not self._decompress:  # ``auto_decompress=False``: the bytes are still encoded
            content = _decode(content, encoding)
        return _without(response.headers, _DROPPED), content


def _encoding(headers: Any) -> str | None:
    value = str(headers.get("content-encoding", "") or "").strip().lower()
    return None if value in ("", "identity") else value


def _without(headers: Any, names: tuple[str, ...] | frozenset[str]) -> Any:
    return _readers().headers((k, v) for k, v in headers.items() if str(k).lower() not in names)


def _decode(content: bytes, encoding: str) -> bytes:
    """Bytes in a content encoding, decoded by aiohttp's own decompressor (what ``auto_decompress``
    would have done)."""
    from aiohttp.http_parser import DeflateBuffer

    reader = _readers().empty(_DEFAULT_BUFSIZE)
    buffer = DeflateBuffer(reader, encoding)
    more = buffer.feed_data(content, len(content))
    while more:
        more = buffer.feed_data(b"", 0)
    buffer.feed_eof()
    return bytes(reader.read_nowait(-1))


# --- readers ------------------------------------------------------------------------------------


class _Unplugged:
    """What a reader with no connection behind it tells about its (absent) protocol."""

    connected = True
    _reading_paused = False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


_UNPLUGGED = _Unplugged()
_SENT = SimpleNamespace(output_size=0)


class _Readers(NamedTuple):
    """aiohttp's ``StreamReader`` and the readers made from it here, with the few other aiohttp types
    a replayed response needs (made and looked up once, on first use)."""

    live: type
    replayed: type
    recording: type
    headers: Callable[[Any], Any]
    """Header pairs → the read-only, case-insensitive multidict aiohttp gives its responses."""
    http11: Any

    def filled(self, limit: int, content: bytes) -> Any:
        """A reader that holds ``content`` and has ended."""
        reader = self.empty(limit)
        if content:
            reader.feed_data(content)
        reader.feed_eof()
        return reader

    def empty(self, limit: int) -> Any:
        """A reader with nothing behind it, to be fed here."""
        return self.live(_UNPLUGGED, limit, loop=asyncio.get_running_loop())


_made: list[_Readers] = []
_recording: dict[int, tuple[Any, Stream]] = {}
"""Live readers being recorded (by id; their class is the recording one) with their ``Stream``; an entry
goes when its reader ends (EOF, an error, or its response released)."""


def _readers() -> _Readers:
    if _made:
        return _made[0]
    from aiohttp.http import HttpVersion11
    from aiohttp.streams import StreamReader
    from multidict import CIMultiDict, CIMultiDictProxy

    def headers(pairs: Any) -> Any:
        return CIMultiDictProxy(CIMultiDict(pairs))

    class ReplayedReader(StreamReader):
        """aiohttp's reader, fed one recorded chunk each time a read would wait for the network."""

        __slots__ = ("_next", "_offsets", "_parts", "_start")

        def __init__(self, parts: list[bytes], offsets: list[int] | None, limit: int) -> None:
            super().__init__(_UNPLUGGED, limit, loop=asyncio.get_running_loop())  # type: ignore[arg-type]
            self._parts = parts
            self._next = 0
            self._offsets = offsets  # ns from the stream's start, when paced
            self._start = 0

        async def _wait(self, func_name: str) -> None:
            n = self._next
            if n >= len(self._parts):
                self.feed_eof()
                return
            offsets = self._offsets
            if offsets is not None and n < len(offsets):
                if n == 0:
                    self._start = time.monotonic_ns()
                wait = due_in(self._start, offsets[n])
                if wait > 0:
                    await asyncio.sleep(wait)
            self._next = n + 1
            self.feed_data(self._parts[n])

        async def wait_eof(self) -> None:
            while not self._eof:
                await self._wait("wait_eof")

    class RecordingReader(StreamReader):
        """aiohttp's live reader, its class swapped for this one: each chunk is noted as it arrives."""

        __slots__ = ()

        def feed_data(self, data: bytes, size: int = 0) -> bool:
            more = super().feed_data(data, size)
            entry = _recording.get(id(self))
            if entry is not None and data:
                entry[1].feed(bytes(data))
            return more

        def feed_eof(self) -> None:
            try:
                super().feed_eof()
            finally:
                _stop_recording(self)

        def set_exception(self, exc: BaseException, *args: Any) -> None:
            try:
                super().set_exception(exc, *args)
            finally:
                _stop_recording(self)

    _made.append(_Readers(StreamReader, ReplayedReader, RecordingReader, headers, HttpVersion11))
    return _made[0]


def _stop_recording(reader: Any) -> None:
    entry = _recording.pop(id(reader), None)
    if entry is not None:
        entry[1].close()


def _record_stream(reader: Any, stream: Stream) -> None:
    """Note what the live reader already holds, then every chunk that arrives, until it ends."""
    held = b"".join(bytes(part) for part in reader._buffer)  # arrived with the head, not read yet
    if held:
        stream.feed(held)
    if reader.is_eof() or reader.exception() is not None:
        stream.close()
        return
    _recording[id(reader)] = (reader, stream)
    reader.__class__ = _readers().recording  # same layout (no slots of its own): only its methods differ


def _refilled(response: Any, headers: Any, content: bytes, bufsize: int) -> Any:
    """The live response, its body read: the same bytes again for every way of reading it."""
    response._body = content
    if headers is not response.headers:
        response._headers = headers
        response._raw_headers = _raw(headers)
        for name in ("headers", "raw_headers"):  # aiohttp keeps what it computed once
            response._cache.pop(name, None)
    response.content = _readers().filled(bufsize, content)
    return response


def build_response(result: object, req: Any, *, pace: bool = False, bufsize: int = _DEFAULT_BUFSIZE) -> Any:
    """The ``ClientResponse`` a recorded result stands for, for the request aiohttp built: status,
    headers, the recorded bytes (a stream one recorded chunk per read, at its recorded offset with
    ``pace``); no connection behind it."""
    made = _readers()
    recorded = check_result(result)
    headers = result_headers(recorded)
    parts = chunks(recorded)
    kwargs: dict[str, Any] = {
        "writer": None,
        "continue100": None,
        "timer": None,
        "request_info": req.request_info,
        "traces": getattr(req, "_traces", None) or [],
        "loop": req.loop,
        "session": getattr(req, "_session", None),
    }
    if _accepts(req.response_class, "stream_writer"):
        kwargs["stream_writer"] = _SENT
    response = req.response_class(req.method, req.original_url, **kwargs)
    status = int(recorded["status"])
    response.version = made.http11
    response.status = status
    response.reason = _PHRASES.get(status, "")
    response._headers = made.headers(headers)
    response._raw_headers = _raw(response._headers)
    if is_stream(recorded):
        reader = made.replayed(parts, offsets_ns(recorded) if pace else None, bufsize)
    else:
        reader = made.filled(bufsize, parts[0] if len(parts) == 1 else b"".join(parts))
    response.content = reader
    response._closed = False
    reader.on_eof(response._response_eof)  # closed at the end of the body, as a live one is
    return response


def _raw(headers: Any) -> tuple[tuple[bytes, bytes], ...]:
    return tuple((str(k).encode("latin-1", "replace"), str(v).encode("latin-1", "replace")) for k, v in headers.items())
