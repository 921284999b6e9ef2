"""MCP tools: a client's ``call_tool`` is a tool step named after the MCP tool, ``list_tools`` a read-only
step (so the tools' annotations are known offline).

Patched on ``mcp.client.session.ClientSession`` (the 1.x API, and what the 2.x ``Client`` calls), only
when ``mcp`` is already imported, only while a record or replay is active. The side effect comes
from the server's ``ToolAnnotations``: ``readOnlyHint`` true → ``read_only``; ``destructiveHint``
true → ``write``; otherwise (or a tool never listed) ``external``. In a replay a tool that is not
read-only is refused before anything is sent: it never reaches the server.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any

from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.instrumentation import ToolSpec, call_recorded_async

from ._context import replaying

LIST_TOOLS = "mcp.list_tools"
"""The step name of ``list_tools``."""


def _arguments(**arguments: Any) -> Any:
    raise AssertionError("never called")  # pragma: no cover


_SIGNATURE = inspect.signature(_arguments)
_lock = threading.Lock()
_effects: dict[str, SideEffect] = {}
"""What the listings seen in this process say of each tool (cleared when the last block ends)."""
_specs: dict[tuple[str, SideEffect], ToolSpec] = {}


def _spec(name: str, effect: SideEffect) -> ToolSpec:
    spec = _specs.get((name, effect))
    if spec is None:
        spec = _specs[(name, effect)] = ToolSpec(
            name=name,
            kind=StepKind.TOOL,
            side_effect=effect,
            version=None,
            ttl=None,
            ignore=frozenset(),
            leave_out=frozenset(),
            signature=_SIGNATURE,
            is_async=True,
        )
    return spec


def _hint(annotations: object, snake: str, camel: str) -> bool:
    value = getattr(annotations, snake, None)
    if value is None:
        value = getattr(annotations, camel, None)
    return value is True


def side_effect_of(tool: object) -> SideEffect:
    """A listed MCP tool's side effect, from its annotations."""
    annotations = getattr(tool, "annotations", None)
    if annotations is not None and _hint(annotations, "read_only_hint", "readOnlyHint"):
        return SideEffect.READ_ONLY
    if annotations is not None and _hint(annotations, "destructive_hint", "destructiveHint"):
        return SideEffect.WRITE
    return SideEffect.EXTERNAL


def _learn(result: object) -> None:
    with _lock:
        for tool in getattr(result, "tools", None) or ():
            name = getattr(tool, "name", None)
            if isinstance(name, str):
                _effects[name] = side_effect_of(tool)


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
    """Patch ``ClientSession`` if ``mcp`` is imported (called under the activation lock)."""
    module = sys.modules.get("mcp.client.session")
    if module is None:
        return
    cls = module.ClientSession
    types = sys.modules.get("mcp.types") or sys.modules.get("mcp_types")
    call_result = getattr(types, "CallToolResult", None)
    list_result = getattr(types, "ListToolsResult", None)
    if call_result is None or list_result is None:
        return
    for attr, wrapper in (
        ("call_tool", _call_tool_wrapper(cls.call_tool, call_result)),
        ("list_tools", _list_tools_wrapper(cls.list_tools, list_result)),
    ):
        _saved.append((cls, attr, cls.__dict__[attr]))
        setattr(cls, attr, wrapper)


def unpatch_mcp() -> None:
    """Put the original methods back and forget the listings."""
    while _saved:
        cls, attr, original = _saved.pop()
        setattr(cls, attr, original)
    with _lock:
        _effects.clear()


def _call_tool_wrapper(original: Callable[..., Any], model: type[Any]) -> Callable[..., Any]:
    async def call_tool(self: Any, name: str, arguments: dict[str, Any] | None = None, *args: Any, **kw: Any) -> Any:
        with _lock:
            effect = _effects.get(name, SideEffect.EXTERNAL)
        spec = _spec(name, effect)
        given = dict(arguments or {})

        async def live(**_: Any) -> Any:
            return await original(self, name, arguments, *args, **kw)

        session = replaying()
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

        async def live(**_: Any) -> Any:
            return await original(self, *args, **kw)

        session = replaying()
        if session is None:
            result = await call_recorded_async(spec, live, (), given)
        else:
            result = _rebuild(await session.call_async(spec, live, (), given), model)
            absorb = getattr(self, "_absorb_tool_listing", None)
            if callable(absorb) and isinstance(result, model):
                result = absorb(result, complete=cursor is None and getattr(result, "next_cursor", None) is None)
        _learn(result)
        return result

    list_tools.__wrapped__ = original  # type: ignore[attr-defined]
    return list_tools
