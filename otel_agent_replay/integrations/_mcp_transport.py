"""MCP with no server: the client transports, recorded at the JSON-RPC level and replaced by the tape in a
strict replay.

``call_tool`` and ``list_tools`` are steps at the session level (``_mcp``). What else a client asks a
server over its transport (the ``initialize`` handshake, a modern ``server/discover``, ``ping``,
resources and prompts) is a read-only step ``mcp.{method}`` recorded as it passes: the transport's
two streams are relayed through a pair of our own while a record block is active. In a strict replay
(``mode="none"``) the transport itself is replaced: no process is spawned and no connection made;
a small loop answers each request from the tape (``mcp.{method}``), drops notifications, and answers
what the tape does not have with a JSON-RPC error (the miss is the replay's, and fails it). A replay
that may call something live (``new_episodes``, ``once`` of a recorded tape) keeps the real transport
relayed: each request goes to the server and its answer is matched against the tape as ``mcp.{method}``.

Where: ``stdio_client``, ``streamable_http_client`` (1.x: ``streamablehttp_client``) and ``sse_client``
are ``asynccontextmanager`` functions; the generator function each one wraps is swapped in the
wrapper's closure for the length of a block, so every reference to them (``from mcp.client.stdio
import stdio_client`` in the user's module, the 2.x ``Client``) uses ours; the originals go back
exactly when the last block ends. A transport entered before the block began keeps running as it is.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import Token
from typing import Any

from opentelemetry import context as otel_context

from otel_agent_replay.core import RecordMode, SideEffect, StepKind
from otel_agent_replay.instrumentation import StepInFlight, ToolSpec, current_replay, prepare, start_step, step_run

from ._context import SUPPRESS_HTTP_KEY
from ._mcp_effects import note_tape_streams

_TRANSPORTS = (
    ("mcp.client.stdio", "stdio_client"),
    ("mcp.client.streamable_http", "streamable_http_client"),
    ("mcp.client.streamable_http", "streamablehttp_client"),
    ("mcp.client.sse", "sse_client"),
)
_OURS = "__agent_replay_transport__"
"""Marks a transport generator put in place here (so a second patch leaves it)."""
_SESSION_LEVEL = frozenset({"tools/call", "tools/list"})
"""Requests that are steps at the session level (``_mcp``): never recorded again here."""
_HANDSHAKE_VOLATILE = ("clientInfo", "capabilities", "protocolVersion", "_meta")


def _params(**params: Any) -> Any:
    raise AssertionError("never called")  # pragma: no cover


_SIGNATURE = inspect.signature(_params)
_specs: dict[str, ToolSpec] = {}


def method_spec(method: str) -> ToolSpec:
    """The read-only step ``mcp.{method}`` of a JSON-RPC request the client sends its server."""
    spec = _specs.get(method)
    if spec is None:
        spec = _specs[method] = ToolSpec(
            name=f"mcp.{method}",
            kind=StepKind.TOOL,
            side_effect=SideEffect.READ_ONLY,
            version=None,
            ttl=None,
            ignore=frozenset(),
            leave_out=frozenset(),
            signature=_SIGNATURE,
            is_async=True,
            key_ignore=_HANDSHAKE_VOLATILE,  # the client's own name, version and capabilities are not the call
        )
    return spec


def _inner(message: Any) -> Any:
    """A JSON-RPC message itself (1.x wraps it in a root model)."""
    return getattr(message, "root", message)


def _kind(inner: Any) -> str:
    name = type(inner).__name__
    return name.removeprefix("JSONRPC")  # Request, Notification, Response, Error


def _params_of(inner: Any) -> dict[str, Any]:
    params = getattr(inner, "params", None)
    if params is None:
        return {}
    if hasattr(params, "model_dump"):
        params = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(params) if isinstance(params, dict) else {"params": params}


def _result_of(inner: Any) -> Any:
    result: Any = getattr(inner, "result", None)
    dump = getattr(result, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, mode="json", exclude_none=True)
    return result


class McpError(Exception):
    """An MCP server's JSON-RPC error, as recorded (``code`` and ``message``)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def _reply(request_message: Any, *, result: Any = None, error: tuple[int, str] | None = None) -> Any:
    """A ``SessionMessage`` answering a request, built from the request's own classes (1.x or 2.x)."""
    outer = request_message.message
    inner = _inner(outer)
    module = sys.modules[type(inner).__module__]
    if error is not None:
        body = module.JSONRPCError(jsonrpc="2.0", id=inner.id, error=module.ErrorData(code=error[0], message=error[1]))
    else:
        body = module.JSONRPCResponse(jsonrpc="2.0", id=inner.id, result=result if isinstance(result, dict) else {})
    message = type(outer)(body) if outer is not inner else body
    return type(request_message)(message)


# --- recording: relay the transport's streams and note each request and its answer -----------------


def _begin(method: str, params: dict[str, Any]) -> StepInFlight | None:
    run = step_run()
    if run is None:
        return None
    spec = method_spec(method)
    step = start_step(spec, prepare(spec, run, (), params))
    for undo in reversed(step.tokens):  # the answer arrives in another task: leave the step's context now
        undo()
    step.tokens = []
    return step


async def _end_step(step: StepInFlight, inner: Any) -> None:
    if _kind(inner) == "Error":
        error = inner.error
        step.fail(McpError(str(getattr(error, "message", error)), getattr(error, "code", None)))
    else:
        step.finish(_result_of(inner))


def _matcher(session: Any) -> tuple[Callable[[str, dict[str, Any]], Any], Callable[[Any, Any], Awaitable[None]]]:
    """For a replay that talks to the live server (``new_episodes``, ``once`` of a recorded tape): each
    request still goes to the server (a miss may run live later, and the server must have been greeted),
    the client gets the server's answer, and the answer is matched against the tape as the call
    ``mcp.{method}``: a hit consumes the recorded step, a miss is the mode's (appended, or a ``TapeMiss``
    the replay fails on at its end)."""

    def begin(method: str, params: dict[str, Any]) -> Any:
        return (method, params)

    async def end(request: tuple[str, dict[str, Any]], inner: Any) -> None:
        method, params = request

        async def live(**_: Any) -> Any:
            if _kind(inner) == "Error":
                error = inner.error
                raise McpError(str(getattr(error, "message", error)), getattr(error, "code", None))
            return _result_of(inner)

        with contextlib.suppress(Exception):  # the replay keeps the miss or divergence and fails on it at its end
            await session.call_async(method_spec(method), live, (), params)

    return begin, end


@contextlib.asynccontextmanager
async def _relayed(
    streams: tuple[Any, ...],
    begin: Callable[[str, dict[str, Any]], Any],
    end: Callable[[Any, Any], Awaitable[None]],
) -> AsyncIterator[tuple[Any, ...]]:
    """The transport's two streams relayed through a pair of ours: ``begin(method, params)`` as a request
    passes (None: nothing to note), ``end(noted, answer)`` as its answer comes back, before the client
    sees it."""
    import anyio

    read, write, *rest = streams  # 1.x streamable HTTP gives its get_session_id after the two streams
    pending: dict[Any, Any] = {}
    to_client_send, to_client = anyio.create_memory_object_stream[Any](0)
    from_client, from_client_receive = anyio.create_memory_object_stream[Any](0)

    async def outgoing() -> None:
        async with from_client_receive:
            async for message in from_client_receive:
                inner = _inner(getattr(message, "message", None))
                if _kind(inner) == "Request" and inner.method not in _SESSION_LEVEL:
                    noted = begin(inner.method, _params_of(inner))
                    if noted is not None:
                        pending[inner.id] = noted
                await write.send(message)

    async def incoming() -> None:
        async with to_client_send:
            async for message in read:
                inner = _inner(getattr(message, "message", None))
                noted = pending.pop(getattr(inner, "id", None), None) if inner is not None else None
                if noted is not None:
                    await end(noted, inner)
                await to_client_send.send(message)

    async with anyio.create_task_group() as group:
        group.start_soon(outgoing)
        group.start_soon(incoming)
        try:
            yield (to_client, from_client, *rest)
        finally:
            group.cancel_scope.cancel()


# --- replay: the tape is the server -------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _from_tape(session: Any, extras: tuple[Any, ...] = ()) -> AsyncIterator[tuple[Any, ...]]:
    import anyio

    to_client_send, to_client = anyio.create_memory_object_stream[Any](16)
    from_client, from_client_receive = anyio.create_memory_object_stream[Any](16)
    note_tape_streams(to_client, from_client)  # a session over these reaches no live server

    async def refuse(**_: Any) -> Any:
        raise McpError("no MCP server runs during a strict replay: the tape answers", -32601)

    async def serve() -> None:
        async with from_client_receive, to_client_send:
            async for message in from_client_receive:
                inner = _inner(getattr(message, "message", None))
                if _kind(inner) != "Request":
                    continue  # notifications (initialized, cancelled, roots changed) need no answer
                try:
                    result = await session.call_async(method_spec(inner.method), refuse, (), _params_of(inner))
                except Exception as exc:  # the replay keeps the miss or divergence and fails on it at its end
                    reply = _reply(message, error=(getattr(exc, "code", None) or -32603, str(exc).split("\n")[0]))
                else:
                    reply = _reply(message, result=result)
                await to_client_send.send(reply)

    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        try:
            yield (to_client, from_client, *extras)
        finally:
            group.cancel_scope.cancel()


def _replaying() -> tuple[Any, bool]:
    """The replay of this context (None while recording or outside one) and whether it is strict."""
    session = current_replay.get()
    if session is None or getattr(session, "recording", False):
        return None, False
    return session, getattr(session, "mode", None) == RecordMode.NONE


def _transport(original: Callable[..., Any]) -> Callable[..., Any]:
    """The generator function put in place of a transport's: the tape in a strict replay, the real
    transport relayed while recording (each request a step) and in a replay that talks to the live server
    (each request matched against the tape), the real one alone otherwise."""
    real = contextlib.asynccontextmanager(original)
    extras = _extras(original)

    async def transport(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        session, strict = _replaying()
        if strict:
            async with _from_tape(session, extras) as streams:
                yield streams
            return
        if session is not None:
            begin, end = _matcher(session)
        elif step_run() is not None:
            begin, end = _begin, _end_step
        else:
            async with real(*args, **kwargs) as streams:
                yield streams
            return
        # The transport's own HTTP (streamable HTTP, SSE) is the MCP traffic recorded here, not HTTP steps.
        tokens: list[Token[Any]] = [otel_context.attach(otel_context.set_value(SUPPRESS_HTTP_KEY, True))]
        try:
            async with real(*args, **kwargs) as streams:
                otel_context.detach(tokens.pop())
                try:
                    async with _relayed(streams, begin, end) as relayed:
                        yield relayed
                finally:  # its closing traffic is MCP's too (1.x ends its HTTP session with a DELETE)
                    tokens.append(otel_context.attach(otel_context.set_value(SUPPRESS_HTTP_KEY, True)))
        finally:
            if tokens:
                otel_context.detach(tokens.pop())

    setattr(transport, _OURS, True)
    return transport


def _no_session_id() -> str | None:
    return None  # the tape is the server: no MCP session id was given


def _extras(original: Callable[..., Any]) -> tuple[Any, ...]:
    """What a transport yields after its two streams, for the tape to yield too: 1.x's streamable HTTP
    (``AsyncGenerator[tuple[read, write, GetSessionIdCallback], None]``) gives ``get_session_id``."""
    try:
        hint = inspect.signature(original).return_annotation
    except (TypeError, ValueError):
        return ()
    if isinstance(hint, str):  # postponed annotations: the alias's name is in the text
        return (_no_session_id,) if "GetSessionIdCallback" in hint else ()
    yielded = typing.get_args(typing.get_args(hint)[0]) if typing.get_args(hint) else ()
    return (_no_session_id,) if len(yielded) == 3 else ()


MODULES = frozenset(module for module, _ in _TRANSPORTS) | {"mcp.client.session"}
"""The modules whose first import inside a block patches MCP then (``_activation``'s import hook)."""


def patch_transports() -> list[Callable[[], None]]:
    """Swap each imported transport's generator function not swapped yet; returns the undos."""
    undos: list[Callable[[], None]] = []
    for module_name, attr in _TRANSPORTS:
        module = sys.modules.get(module_name)
        helper = getattr(module, attr, None) if module is not None else None
        cells = getattr(helper, "__closure__", None) or ()
        cell = next((c for c in cells if inspect.isasyncgenfunction(_contents(c))), None)
        if cell is None or getattr(cell.cell_contents, _OURS, False):  # missing, or swapped already
            continue
        original = cell.cell_contents
        cell.cell_contents = _transport(original)
        undos.append(lambda cell=cell, original=original: setattr(cell, "cell_contents", original))  # type: ignore[misc]
    return undos


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None
