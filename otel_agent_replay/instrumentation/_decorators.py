"""Instrumentation: the ``@tool`` and ``@model_call`` decorators.

The decorated function keeps its signature, annotations, name and docstring, so
frameworks that build tool schemas from the function see the original. Each call is a
recorded step inside a run (``agent_run``), or is served by the active replay.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar, cast, overload

from otel_agent_replay.core import SideEffect, SideEffectName, StepKind

from ._outside import ACTIVE_REPLAYS, refuse_outside
from ._runs import RunHandle, agent_run
from ._runtime import current_recording, current_replay
from ._spec import SPEC_ATTRIBUTE, ToolSpec, make_spec, tool_spec
from ._steps import begin_step
from ._streams import record_stream, record_stream_async
from ._unwrap import unwrap_twin

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["RunHandle", "ToolSpec", "agent_run", "model_call", "tool", "tool_spec"]


def _wrap(fn: F, spec: ToolSpec) -> F:
    if spec.stream == "sync":

        @functools.wraps(fn)
        def stream_wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
            session = current_replay.get()
            if session is not None:
                return (yield from session.stream(spec, fn, args, kwargs))
            if ACTIVE_REPLAYS and current_recording.get() is None:
                refuse_outside(spec)  # a replay is active, but not in this context: fail closed
            return (yield from record_stream(spec, fn, args, kwargs))

        wrapper: Callable[..., Any] = stream_wrapper
    elif spec.stream == "async":

        @functools.wraps(fn)
        async def async_stream_wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            session = current_replay.get()
            if session is None and ACTIVE_REPLAYS and current_recording.get() is None:
                refuse_outside(spec)  # a replay is active, but not in this context: fail closed
            source = (
                session.stream_async(spec, fn, args, kwargs)
                if session is not None
                else record_stream_async(spec, fn, args, kwargs)
            )
            try:
                async for chunk in source:
                    yield chunk
            finally:
                await source.aclose()  # type: ignore[attr-defined]

        wrapper = async_stream_wrapper
    elif spec.is_async:
        async_fn = cast(Callable[..., Awaitable[Any]], fn)

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the user's frames, not ours
            session = current_replay.get()
            if session is not None:
                return await session.call_async(spec, async_fn, args, kwargs)
            if ACTIVE_REPLAYS and current_recording.get() is None:
                refuse_outside(spec)  # a replay is active, but not in this context: fail closed
            step = begin_step(spec, args, kwargs)  # call_recorded_async, inlined (one frame less)
            if step is None:
                return await async_fn(*args, **kwargs)
            try:
                result = await async_fn(*args, **kwargs)
            except BaseException as exc:
                step.fail(exc)
                raise
            step.finish(result)
            return result

        wrapper = async_wrapper
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
            step = begin_step(spec, args, kwargs)
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
    if not hasattr(fn, "__qualname__"):  # a partial: named by the tool's name
        wrapper.__name__ = wrapper.__qualname__ = spec.name
    wrapper.__wrapped__ = unwrap_twin(fn, spec)  # type: ignore[attr-defined]
    return cast(F, wrapper)


def _callable_object(f: Any) -> tuple[Any, str | None]:
    """What to decorate for ``f``, and its default name: an object with ``__call__`` (not a function, a
    class or a partial) is decorated as its bound ``__call__`` and named by its class."""
    if inspect.isroutine(f) or inspect.isclass(f) or isinstance(f, functools.partial) or not callable(f):
        return f, None
    return f.__call__, type(f).__name__


def _named_as(wrapper: F, given: Any, default: str | None) -> F:
    """Name the wrapper of an object's bound ``__call__`` by the object's class."""
    if default is not None:
        wrapper.__name__ = default
        wrapper.__qualname__ = type(given).__qualname__
    return wrapper


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
    result_type: Any = None,
    key_ignore: Iterable[str] = (),
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
    result_type: Any = None,
    key_ignore: Iterable[str] = (),
) -> F | Callable[[F], F]:
    """Record each call of a tool function as an ``execute_tool`` step.

    Use bare (``@tool``) or with options: ``name`` (default: the function's name),
    ``side_effect`` (``"read_only"``, ``"write"`` or ``"external"``; undeclared is
    treated as not read-only), ``version`` (the tool_version), ``ttl`` (seconds or a
    timedelta; sets ``agent_replay.expires_at``), ``ignore`` (parameters left out of the
    call key and the tape), ``result_type`` (the type a replay rebuilds results as; default: the
    return annotation), ``key_ignore`` (argument paths left out of the call key, such as
    ``"messages[*].tool_call_id"``; ``"@model_volatile"`` names the volatile model-request
    fields; the tape keeps them). Works on sync and async functions, generators (one step,
    chunk by chunk) and methods.
    """

    def decorate(given: F) -> F:
        inner = tool_spec(given)
        if inner is not None and inner.function is not None:  # decorated twice: one step; the outer options win
            return decorate_spec(cast(F, inner.function), inner)
        f, default = _callable_object(given)
        spec = make_spec(
            f,
            name=name or default,
            kind=StepKind.TOOL,
            side_effect=side_effect,
            version=version,
            ttl=ttl,
            ignore=ignore,
            result_type=result_type,
            key_ignore=key_ignore,
        )
        return cast(F, _named_as(_wrap(f, spec), given, default))

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
            result_type=result_type if result_type is not None else inner.result_type,
            key_ignore=tuple(key_ignore) or inner.key_ignore,
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
    result_type: Any = None,
    key_ignore: Iterable[str] = (),
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
    result_type: Any = None,
    key_ignore: Iterable[str] = (),
) -> F | Callable[[F], F]:
    """Record each call of a function that calls a model as a ``chat {model}`` step.

    ``provider`` and ``model`` name the service (``model`` defaults to a ``model``
    argument of the call). Token usage is read from the result's ``usage``. ``result_type``: the
    type a replay rebuilds results as (default: the return annotation). A generator or async
    generator (a streamed answer) is one step, chunk by chunk. ``key_ignore``: argument
    paths left out of the call key (``"@model_volatile"``: the volatile fields of model requests).
    """

    def decorate(given: F) -> F:
        inner = tool_spec(given)
        # decorated twice: one step, not two
        f, default = (inner.function, None) if inner and inner.function else _callable_object(given)
        spec = make_spec(
            f,
            name=name or (inner.name if inner else default),
            kind=StepKind.LLM,
            side_effect=None,
            version=version,
            ttl=None,
            ignore=ignore,
            provider=provider,
            model=model,
            result_type=result_type,
            key_ignore=key_ignore,
        )
        return cast(F, _named_as(_wrap(f, spec), given, default))

    return decorate(fn) if fn is not None else decorate
