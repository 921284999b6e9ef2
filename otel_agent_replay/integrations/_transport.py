"""The capture point: the transports of httpx and httpx2, patched only while a record or replay is active.

``activate()`` patches ``HTTPTransport.handle_request`` and ``AsyncHTTPTransport.handle_async_request``
of each of the two packages that is importable (reference-counted and thread-safe); closing the last
activation puts the original attributes back exactly. A request that matches a model route is a model
step: recorded (streams pass through to the caller chunk by chunk), or answered by the active replay
from the tape with no socket opened.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import orjson

from otel_agent_replay.core import ReplayDivergence
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import StepInFlight, active_run, current_replay, prepare, start_step

from ._genai import request_attributes
from ._mcp import patch_mcp, unpatch_mcp
from ._routes import HttpRoute, match, routes_for
from ._wire import (
    EventRecorder,
    body_result,
    build_response,
    is_event_stream,
    kept_headers,
    live_stream_class,
)

_MODULES = ("httpx", "httpx2")
_lock = threading.Lock()
_active: list[HttpActivation] = []
_saved: list[tuple[type, str, object]] = []
"""(class, attribute, the original value in the class's own ``__dict__``) for each patched attribute."""
_divergences: weakref.WeakKeyDictionary[object, dict[str, BaseException]] = weakref.WeakKeyDictionary()


class HttpActivation:
    """One active block's claim on the patched transports; ``close()`` releases it."""

    def __init__(self, routes: tuple[HttpRoute, ...]) -> None:
        self.routes = routes
        self.closed = False

    def close(self) -> None:
        with _lock:
            if self.closed:
                return
            self.closed = True
            _active.remove(self)
            if not _active:
                _unpatch()


def activate(http_routes: tuple[HttpRoute, ...] = ()) -> HttpActivation:
    """Patch the transports (if not yet patched) for a record or replay block; ``close()`` the result."""
    activation = HttpActivation(routes_for(http_routes))
    with _lock:
        if not _active:
            _patch()
        _active.append(activation)
    return activation


def patched() -> bool:
    """True while some block holds the transports patched."""
    with _lock:
        return bool(_saved)


def _routes() -> tuple[HttpRoute, ...]:
    active = _active
    return active[-1].routes if active else ()


def _patch() -> None:
    patch_mcp()
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        sync_cls, async_cls = module.HTTPTransport, module.AsyncHTTPTransport
        for cls, attr, wrapper in (
            (sync_cls, "handle_request", _sync_wrapper(module, sync_cls.handle_request)),
            (async_cls, "handle_async_request", _async_wrapper(module, async_cls.handle_async_request)),
        ):
            _saved.append((cls, attr, cls.__dict__[attr]))
            setattr(cls, attr, wrapper)


def _unpatch() -> None:
    unpatch_mcp()
    while _saved:
        cls, attr, original = _saved.pop()
        setattr(cls, attr, original)


def _body(content: bytes) -> dict[str, Any] | None:
    """The request's JSON body as arguments (an object's fields; anything else under ``body``)."""
    try:
        body = orjson.loads(content or b"null")
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else {"body": body}


def _replaying() -> Any:
    session = current_replay.get()
    if session is None or getattr(session, "recording", False):
        return None
    return session


def _body_key(route: HttpRoute, body: dict[str, Any]) -> str:
    return hashlib.sha256(route.name.encode() + orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _seen_divergence(session: object, key: str) -> BaseException | None:
    return _divergences.get(session, {}).get(key)


def _remember_divergence(session: object, key: str, exc: BaseException) -> None:
    _divergences.setdefault(session, {})[key] = exc


def _release_context(step: StepInFlight) -> None:
    """Leave the step's context now: the rest of the step (reading a stream) happens in the caller's."""
    for undo in reversed(step.tokens):
        undo()
    step.tokens = []


def _begin(route: HttpRoute, body: dict[str, Any]) -> StepInFlight | None:
    run = active_run()
    if run is None:
        return None
    step = start_step(route.spec, prepare(route.spec, run, (), body))
    attrs = request_attributes(body)
    if route.operation != A.OP_CHAT:
        model = body.get("model") if isinstance(body.get("model"), str) else route.name
        step.span.update_name(f"{route.operation} {model}")
        attrs[A.GEN_AI_OPERATION_NAME] = route.operation
    step.span.set_attributes(attrs)
    return step


def _finish(step: StepInFlight, result: dict[str, Any]) -> None:
    step.finish(result)  # the route's spec adds the response's attributes


def _streamed(module: ModuleType, step: StepInFlight, started: float, response: Any) -> Any:
    """The live response with its event stream wrapped (the step ends when it closes), or None when
    the response is not an event stream (or is compressed: then it is read whole)."""
    status, headers = response.status_code, kept_headers(response.headers)
    if is_event_stream(response.headers) and response.headers.get("content-encoding", "identity") == "identity":
        recorder = EventRecorder(started)
        token = 0

        def done() -> None:
            if step.run.stream_closed(token):  # not ended already by the run's end
                _finish(step, recorder.result(status, headers))

        stream = live_stream_class(module)(response.stream, recorder, done)
        # a stream the SDK never closes is ended by its run's end, so its step still reaches the tape
        token = step.run.stream_opened(step.spec.name, stream.finish)
        response.stream = stream
        return response
    return None


def _live_result(response: Any, content: bytes) -> dict[str, Any]:
    headers = kept_headers(response.headers)
    if is_event_stream(response.headers):
        recorder = EventRecorder(time.monotonic())
        recorder.feed(content)
        return recorder.result(response.status_code, headers)
    return body_result(response.status_code, headers, content)


def _fresh(module: ModuleType, response: Any, content: bytes, request: Any) -> Any:
    """The live response again, its body read and decoded (so no content-encoding any more)."""
    headers = [(k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length")]
    return module.Response(
        response.status_code, headers=headers, content=content, extensions=response.extensions, request=request
    )


def _sync_wrapper(module: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    def handle_request(self: Any, request: Any) -> Any:
        route = match(_routes(), request.method, request.url.path)
        body = _body(request.read()) if route is not None else None
        if route is None or body is None:
            return original(self, request)
        session = _replaying()
        if session is not None:
            return _replay_sync(module, session, route, body, lambda: original(self, request), request)
        step = _begin(route, body)
        if step is None:
            return original(self, request)
        started = time.monotonic()
        try:
            response = original(self, request)
        except BaseException as exc:
            _release_context(step)
            step.fail(exc)
            raise
        _release_context(step)
        streamed = _streamed(module, step, started, response)
        if streamed is not None:
            return streamed
        try:
            content = response.read()
        except BaseException as exc:
            step.fail(exc)
            raise
        _finish(step, _live_result(response, content))
        return _fresh(module, response, content, request)

    handle_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_request


def _async_wrapper(module: ModuleType, original: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def handle_async_request(self: Any, request: Any) -> Any:
        route = match(_routes(), request.method, request.url.path)
        body = _body(await request.aread()) if route is not None else None
        if route is None or body is None:
            return await original(self, request)
        session = _replaying()
        if session is not None:
            return await _replay_async(module, session, route, body, lambda: original(self, request), request)
        step = _begin(route, body)
        if step is None:
            return await original(self, request)
        started = time.monotonic()
        try:
            response = await original(self, request)
        except BaseException as exc:
            _release_context(step)
            step.fail(exc)
            raise
        _release_context(step)
        streamed = _streamed(module, step, started, response)
        if streamed is not None:
            return streamed
        try:
            content = await response.aread()
        except BaseException as exc:
            step.fail(exc)
            raise
        _finish(step, _live_result(response, content))
        return _fresh(module, response, content, request)

    handle_async_request.__wrapped__ = original  # type: ignore[attr-defined]
    return handle_async_request


def _replay_sync(
    module: ModuleType, session: Any, route: HttpRoute, body: dict[str, Any], send: Callable[[], Any], request: Any
) -> Any:
    key = _body_key(route, body)
    seen = _seen_divergence(session, key)
    if seen is not None:
        raise seen  # an SDK retrying a divergence: the same error, not a new step

    def live(**_: Any) -> dict[str, Any]:
        response = send()
        return _live_result(response, response.read())

    try:
        result = session.call(route.spec, live, (), body)
    except ReplayDivergence as exc:
        _remember_divergence(session, key, exc)
        raise
    return build_response(module, result, request, pace=session.pace)


async def _replay_async(
    module: ModuleType,
    session: Any,
    route: HttpRoute,
    body: dict[str, Any],
    send: Callable[[], Awaitable[Any]],
    request: Any,
) -> Any:
    key = _body_key(route, body)
    seen = _seen_divergence(session, key)
    if seen is not None:
        raise seen

    async def live(**_: Any) -> dict[str, Any]:
        response = await send()
        return _live_result(response, await response.aread())

    try:
        result = await session.call_async(route.spec, live, (), body)
    except ReplayDivergence as exc:
        _remember_divergence(session, key, exc)
        raise
    return build_response(module, result, request, pace=session.pace)
