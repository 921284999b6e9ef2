"""MCP tools: a client's ``call_tool`` is a tool step named after the MCP tool, ``list_tools`` a read-only
step (so the tools' annotations are known offline).

Patched on ``mcp.client.session.ClientSession`` (the 1.x API, and what the 2.x ``Client`` calls), only
when ``mcp`` is imported, only while a record or replay is active. The side effect comes from the
user's ``mcp_side_effects=`` or the server's ``ToolAnnotations`` (``readOnlyHint`` true → ``read_only``;
``destructiveHint`` true → ``write``; otherwise, or a tool never listed, ``external``), per connection,
the tape only narrowing (``_mcp_effects``). In a replay a tool that is not read-only is refused before
anything is sent: it never reaches the server.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.instrumentation import ToolSpec, call_recorded_async

from ._context import replaying
from ._mcp_effects import forget, learn, note_server, side_effect

LIST_TOOLS = "mcp.list_tools"
"""The step name of ``list_tools``."""


def _arguments(**arguments: Any) -> Any:
    raise AssertionError("never called")  # pragma: no cover


_SIGNATURE = inspect.signature(_arguments)
_specs: dict[tuple[str, SideEffect, bool], ToolSpec] = {}


def _spec(name: str, effect: SideEffect, vouched: bool = True) -> ToolSpec:
    spec = _specs.get((name, effect, vouched))
    if spec is None:
        spec = _specs[(name, effect, vouched)] = ToolSpec(
            name=name,
            kind=StepKind.TOOL,
            side_effect=effect,
            version=None,
            ttl=None,
            ignore=frozenset(),
            leave_out=frozenset(),
            signature=_SIGNATURE,
            is_async=True,
            vouched=vouched,
        )
    return spec


def _rebuild(result: object, model: type[Any]) -> Any:
    """The SDK's result type again. The tape has field names (1.x types alias ``meta`` as ``_meta``
    and keep unknown keys as extras, so names must count as well as aliases)."""
    if not isinstance(result, dict):
        return result
    try:
        return model.model_validate(result, by_alias=True, by_name=True)
    except TypeError:  # pydantic before 2.11
        return model.model_validate(result)


_saved: list[tuple[type, str, object]] = []


def patch_mcp() -> None:
    """Patch ``ClientSession`` if ``mcp`` is imported and it is not patched yet (called under the activation
    lock, at a block's start and again when an MCP module is first imported inside a block)."""
    module = sys.modules.get("mcp.client.session")
    if module is None or _saved:  # not imported yet (the import hook calls again), or patched already
        return
    cls = module.ClientSession
    types = sys.modules.get("mcp.types") or sys.modules.get("mcp_types")
    call_result = getattr(types, "CallToolResult", None)
    list_result = getattr(types, "ListToolsResult", None)
    if call_result is None or list_result is None:
        return
    list_tools = cls.list_tools
    wrappers: list[tuple[str, Callable[..., Any]]] = [
        ("call_tool", _call_tool_wrapper(cls.call_tool, call_result, list_tools)),
        ("list_tools", _list_tools_wrapper(list_tools, list_result)),
    ]
    if "initialize" in cls.__dict__:
        wrappers.append(("initialize", _initialize_wrapper(cls.initialize)))
    for attr, wrapper in wrappers:
        _saved.append((cls, attr, cls.__dict__[attr]))
        setattr(cls, attr, wrapper)


def unpatch_mcp() -> None:
    """Put the original methods back and forget the listings."""
    while _saved:
        cls, attr, original = _saved.pop()
        setattr(cls, attr, original)
    forget()


async def _list_all(list_tools: Callable[..., Any], client: Any) -> Any:
    """Every page of the live server's listing (the original ``list_tools``: not a step)."""
    result = await list_tools(client)
    tools = list(getattr(result, "tools", None) or ())
    cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
    types = sys.modules.get("mcp.types")
    params = getattr(types, "PaginatedRequestParams", None)
    for _ in range(100):  # a server that pages forever is not asked past 100 pages
        if not cursor:
            break
        page = await (list_tools(client, params=params(cursor=cursor)) if params else list_tools(client, cursor))
        tools.extend(getattr(page, "tools", None) or ())
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
    return _Listing(tools)


class _Listing:
    def __init__(self, tools: list[Any]) -> None:
        self.tools = tools


def _call_tool_wrapper(
    original: Callable[..., Any], model: type[Any], list_tools: Callable[..., Any]
) -> Callable[..., Any]:
    async def call_tool(self: Any, name: str, arguments: dict[str, Any] | None = None, *args: Any, **kw: Any) -> Any:
        session = replaying()
        effect, vouched = await side_effect(self, name, session, lambda: _list_all(list_tools, self))
        spec = _spec(name, effect, vouched)
        given = dict(arguments or {})

        async def live(**_: Any) -> Any:
            return await original(self, name, arguments, *args, **kw)

        if session is None:
            return await call_recorded_async(spec, live, (), given)
        return _rebuild(await session.call_async(spec, live, (), given), model)

    call_tool.__wrapped__ = original  # type: ignore[attr-defined]
    return call_tool


def _list_tools_wrapper(original: Callable[..., Any], model: type[Any]) -> Callable[..., Any]:
    spec = _spec(LIST_TOOLS, SideEffect.READ_ONLY)

    async def list_tools(self: Any, *args: Any, **kw: Any) -> Any:
        first = args[0] if args else kw.get("params", kw.get("cursor"))
        cursor = first if isinstance(first, str) else getattr(first, "cursor", None)  # 1.x: a cursor; 2.x: params
        given = {"cursor": cursor} if cursor is not None else {}

        ran: list[bool] = []

        async def live(**_: Any) -> Any:
            ran.append(True)
            return await original(self, *args, **kw)

        session = replaying()
        if session is None:
            result = await call_recorded_async(spec, live, (), given)
        else:
            result = _rebuild(await session.call_async(spec, live, (), given), model)
            absorb = getattr(self, "_absorb_tool_listing", None)
            if callable(absorb) and isinstance(result, model):
                result = absorb(result, complete=cursor is None and getattr(result, "next_cursor", None) is None)
        learn(self, result, live=bool(ran))  # a listing the tape served can only narrow
        return result

    list_tools.__wrapped__ = original  # type: ignore[attr-defined]
    return list_tools


def _initialize_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    async def initialize(self: Any, *args: Any, **kw: Any) -> Any:
        result = await original(self, *args, **kw)
        note_server(self, result)  # 1.x keeps no server name of its own
        return result

    initialize.__wrapped__ = original  # type: ignore[attr-defined]
    return initialize
