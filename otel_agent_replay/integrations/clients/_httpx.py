"""httpx and httpx2: ``HTTPTransport.handle_request`` and ``AsyncHTTPTransport.handle_async_request``.

Every client of either package that sends through its default transport (the OpenAI, Anthropic,
Cohere, Ollama and Gemini SDKs among them) passes here. A request that is a step is recorded (a
stream passes through to the caller chunk by chunk) or answered with an ``httpx.Response`` built
from the tape, so no connection is used at all.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import ModuleType
from typing import Any

from otel_agent_replay.instrumentation import due_in

from .. import _activation
from .._exchange import Exchange, Stream, intercept, response_result
from .._request import Request
from .._wire import check_result, chunks, is_stream, offsets_ns, result_headers

_MODULES = ("httpx", "httpx2")


def patch(name: str) -> list[_activation.Restore]:
    """Patch the transports of ``name`` (httpx or httpx2, imported)."""
    module = sys.modules[name]
    sync_cls, async_cls = module.HTTPTransport, module.AsyncHTTPTransport
    return [
        _activation.replace(sync_cls, "handle_request", functools.partial(_sync_wrapper, module)),
        _activation.replace(async_cls, "handle_async_request", functools.partial(_async_wrapper, module)),
    ]


for _name in _MODULES:
    _activation.register_client(functools.partial(patch, _name), needs=(_name,))


def _request(request: Any, content: bytes) -> Request:
    url = request.url
    return Request(
        request.method.upper(),
        url.scheme,
        (url.host or "").lower(),
        url.port,
        url.path or "/",
        url.query.decode("ascii", "replace") if isinstance(url.query, bytes) else str(url.query),
        request.headers,  # httpx.Headers: looked up by any case, as Request.headers is (no copy per request)
        content,
    )


def _fresh(module: ModuleType, response: Any, content: bytes, request: Any) -> Any:
    """The live response again, its body read and decoded (so no content-encoding any more)."""
    headers = [(k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length")]
    headers.append(("content-length", str(len(content))))
    # unread, as the transport's own answer is: the client reads it (and sets ``elapsed``) as usual
    stream = module.ByteStream(content)
    return module.Response(
        response.status_code, headers=headers, stream=stream, extensions=response.extensions, request=request
    )


_stream_classes: dict[str, tuple[type, type]] = {}


def _classes(module: ModuleType) -> tuple[type, type]:
    """(the replayed stream, the recording stream) of ``module``: byte streams, sync and async."""
    found = _stream_classes.get(module.__name__)
    if found is not None:
        return found

    class ReplayStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, parts: list[bytes], offsets: list[int] | None) -> None:
            self._parts = parts
            self._offsets = offsets  # ns from the stream's start, when paced

        def _wait(self, n: int, start: int) -> float:
            offsets = self._offsets
            return due_in(start, offsets[n]) if offsets is not None and n < len(offsets) else 0.0

        def __iter__(self) -> Iterator[bytes]:
            start = time.monotonic_ns()
            for n, part in enumerate(self._parts):
                wait = self._wait(n, start)
                if wait > 0:
                    time.sleep(wait)
                yield part

        async def __aiter__(self) -> AsyncIterator[bytes]:
            start = time.monotonic_ns()
            for n, part in enumerate(self._parts):
                wait = self._wait(n, start)
                if wait > 0:
                    await asyncio.sleep(wait)
                yield part

    class RecordingStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, stream: Stream) -> None:
            self._inner = inner
            self._stream = stream

        def finish(self) -> None:
            self._stream.close()

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._inner:
                self._stream.feed(chunk)
                yield chunk

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                self._stream.feed(chunk)
                yield chunk

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._stream.close()

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._stream.close()

    found = _stream_classes[module.__name__] = (ReplayStream, RecordingStream)
    return found


def build_response(module: ModuleType, result: object, request: Any, *, pace: bool = False) -> Any:
    """The ``module.Response`` a recorded result stands for: status, headers, the recorded bytes;
    with ``pace``, a stream's events come at their recorded offsets."""
    recorded = check_result(result)
    headers = result_headers(recorded)
    parts = chunks(recorded)
    if is_stream(recorded):
        stream = _classes(module)[0](parts, offsets_ns(recorded) if pace else None)
        return module.Response(recorded["status"], headers=headers, stream=stream, request=request)
    body = parts[0] if len(parts) == 1 else b"".join(parts)
    # As the live transport answers: the head, and the body as an unread stream for the client to read
    # (so ``elapsed`` is set, ``client.stream()`` gets it unconsumed); its length as the server sends it.
    return module.Response(
        recorded["status"], headers=_head(module, headers, len(body)), stream=module.ByteStream(body), request=request
    )


_heads: dict[tuple[str, int, tuple[tuple[str, str], ...]], Any] = {}


def _head(module: ModuleType, headers: dict[str, str], length: int) -> Any:
    """The recorded headers and the body's length as ``module.Headers``, made once per recorded head:
    the response copies them (``Headers(headers)`` takes a list copy), so no request shares them."""
    key = (module.__name__, length, tuple(headers.items()))
    found = _heads.get(key)
    if found is None:
        headers["content-length"] = str(length)
        found = module.Headers(headers)
        if len(_heads) > 1_000:  # many different heads (a varying header, many sizes): keep memory bounded
            _heads.clear()
        _heads[key] = found
    return found


def _recorded(module: ModuleType, exchange: Exchange, response: Any) -> Any | None:
    """The live response with its stream wrapped while it is recorded, or None to read it whole."""
    stream = exchange.stream(response.status_code, response.headers)
    if stream is None:
        return None
    response.stream = _classes(module)[1](response.stream, stream)
    return response


def _sync_wrapper(module: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    def handle_request(self: Any, request: Any) -> Any:
        if _activation.settings() is None:
            return original(self, request)
        exchange = intercept(_request(request, request.read()))
        if exchange is None:
            return original(self, request)
        if exchange.replaying:

            def live() -> dict[str, Any]:
                response = original(self, request)
                return response_result(response.status_code, response.headers, response.read())

            return build_response(module, exchange.answer(live), request, pace=exchange.pace)
        exchange.begin()
        try:
            response = original(self, request)
        except BaseException as exc:
            exchange.fail(exc)
            raise
        exchange.sent()
        streamed = _recorded(module, exchange, response)
        if streamed is not None:
            return streamed
        try:
            content = response.read()
        except BaseException as exc:
            exchange.fail(exc)
            raise
        exchange.finish(response.status_code, response.headers, content)
        return _fresh(module, response, content, request)

    handle_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_request


def _async_wrapper(module: ModuleType, original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def handle_async_request(self: Any, request: Any) -> Any:
        if _activation.settings() is None:
            return await original(self, request)
        exchange = intercept(_request(request, await request.aread()))
        if exchange is None:
            return await original(self, request)
        if exchange.replaying:

            async def live() -> dict[str, Any]:
                response = await original(self, request)
                return response_result(response.status_code, response.headers, await response.aread())

            return build_response(module, await exchange.answer_async(live), request, pace=exchange.pace)
        exchange.begin()
        try:
            response = await original(self, request)
        except BaseException as exc:
            exchange.fail(exc)
            raise
        exchange.sent()
        streamed = _recorded(module, exchange, response)
        if streamed is not None:
            return streamed
        try:
            content = await response.aread()
        except BaseException as exc:
            exchange.fail(exc)
            raise
        exchange.finish(response.status_code, response.headers, content)
        return _fresh(module, response, content, request)

    handle_async_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_async_request
