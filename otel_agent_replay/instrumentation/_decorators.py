"""Instrumentation: the ``@tool`` and ``@model_call`` decorators.

The decorated function keeps its signature, annotations, name and docstring, so
frameworks that build tool schemas from the function see the original. Each call is a
recorded step inside a run (``agent_run``), or is served by the active replay.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, cast, overload

from otel_agent_replay.core import SideEffect, SideEffectName, StepKind

from ._outside import ACTIVE_REPLAYS, refuse_outside
from ._runs import RunHandle, agent_run
from ._runtime import current_recording, current_replay
from ._spec import SPEC_ATTRIBUTE, ToolSpec, make_spec, tool_spec
from ._steps import _begin

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["RunHandle", "ToolSpec", "agent_run", "model_call", "tool", "tool_spec"]


def _wrap(fn: F, spec: ToolSpec) -> F:
    if spec.is_async:
        async_fn = cast(Callable[..., Awaitable[Any]], fn)

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the user's frames, not ours
            session = current_replay.get()
            if session is not None:
                return await session.call_async(spec, async_fn, args, kwargs)
            if ACTIVE_REPLAYS and current_recording.get() is None:
                refuse_outside(spec)  # a replay is active, but not in this context: fail closed
            step = _begin(spec, args, kwargs)  # call_recorded_async, inlined (one frame less)
            if step is None:
                return await async_fn(*args, **kwargs)
            try:
                result = await async_fn(*args, **kwargs)
            except BaseException as exc:
                step.fail(exc)
                raise
            step.finish(result)
            return result

        wrapper: Callable[..., Any] = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the user's frames, not ours
            session = current_replay.get()
            if session is not None:
                return session.call(spec, fn, args, kwargs)
            if ACTIVE_REPLAYS and current_recording.get() is None:
                refuse_outside(spec)  # a replay is active, but not in this context: fail closed
            # call_recorded, inlined: the agent's function runs one frame below this one, so a
            # recursive tool keeps as much of the recursion limit as it can (see docs/design.md)
            step = _begin(spec, args, kwargs)
            if step is None:
                return fn(*args, **kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                step.fail(exc)
                raise
            step.finish(result)
            return result

        wrapper = sync_wrapper
    setattr(wrapper, SPEC_ATTRIBUTE, spec)
    return cast(F, wrapper)


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    side_effect: SideEffect | SideEffectName | None = None,
    version: str | None = None,
    ttl: float | _dt.timedelta | None = None,
    ignore: Iterable[str] = (),
) -> Callable[[F], F]: ...
def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    side_effect: SideEffect | SideEffectName | None = None,
    version: str | None = None,
    ttl: float | _dt.timedelta | None = None,
    ignore: Iterable[str] = (),
) -> F | Callable[[F], F]:
    """Record each call of a tool function as an ``execute_tool`` step.

    Use bare (``@tool``) or with options: ``name`` (default: the function's name),
    ``side_effect`` (``"read_only"``, ``"write"`` or ``"external"``; undeclared is
    treated as not read-only), ``version`` (the tool_version), ``ttl`` (seconds or a
    timedelta; sets ``agent_replay.expires_at``), ``ignore`` (parameters left out of the
    call key and the tape). Works on sync and async functions and on methods.
    """

    def decorate(f: F) -> F:
        inner = tool_spec(f)
        if inner is not None:  # decorated twice: one step, not two; the outer options win
            f = f.__wrapped__  # type: ignore[attr-defined]
            return decorate_spec(f, inner)
        return _wrap(
            f,
            make_spec(
                f, name=name, kind=StepKind.TOOL, side_effect=side_effect, version=version, ttl=ttl, ignore=ignore
            ),
        )

    def decorate_spec(f: F, inner: ToolSpec) -> F:
        spec = make_spec(
            f,
            name=name or inner.name,
            kind=StepKind.TOOL,
            side_effect=side_effect or inner.side_effect,
            version=version if version is not None else inner.version,
            ttl=ttl if ttl is not None else inner.ttl,
            ignore=tuple(ignore) or tuple(inner.ignore),
            provider=inner.provider,
            model=inner.model,
        )
        return _wrap(f, spec)

    return decorate(fn) if fn is not None else decorate


@overload
def model_call(fn: F, /) -> F: ...
@overload
def model_call(
    *,
    provider: str | None = None,
    model: str | None = None,
    name: str | None = None,
    version: str | None = None,
    ignore: Iterable[str] = (),
) -> Callable[[F], F]: ...
def model_call(
    fn: F | None = None,
    /,
    *,
    provider: str | None = None,
    model: str | None = None,
    name: str | None = None,
    version: str | None = None,
    ignore: Iterable[str] = (),
) -> F | Callable[[F], F]:
    """Record each call of a function that calls a model as a ``chat {model}`` step.

    ``provider`` and ``model`` name the service (``model`` defaults to a ``model``
    argument of the call). Token usage is read from the result's ``usage``.
    """

    def decorate(f: F) -> F:
        inner = tool_spec(f)
        if inner is not None:  # decorated twice: one step, not two
            f = f.__wrapped__  # type: ignore[attr-defined]
        spec = make_spec(
            f,
            name=name or (inner.name if inner else None),
            kind=StepKind.LLM,
            side_effect=None,
            version=version,
            ttl=None,
            ignore=ignore,
            provider=provider,
            model=model,
        )
        return _wrap(f, spec)

    return decorate(fn) if fn is not None else decorate
