"""Doubles: a function with a tool's signature whose calls the replay serves, for frameworks that
hold tools in their own registry (``ReplaySession.double``, ``ReplaySession.doubles``)."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any, cast

from otel_agent_replay.core import SideEffect, SideEffectName, StepKind
from otel_agent_replay.instrumentation import make_spec, tool_spec

from ._serving import ServingSession


def make_double(
    session: ServingSession,
    fn: Callable[..., Any],
    name: str | None = None,
    side_effect: SideEffect | SideEffectName | None = None,
) -> Callable[..., Any]:
    """A double of ``fn`` (sync, async, generator or async generator, as ``fn`` is) served by ``session``."""
    spec = tool_spec(fn)
    original = (spec.function or fn) if spec is not None else fn  # the function itself, not its unwrap twin
    if spec is None or name is not None or side_effect is not None:
        spec = make_spec(
            original,
            name=name or (spec.name if spec else None),
            kind=StepKind.TOOL,
            side_effect=side_effect or (spec.side_effect if spec else None),
            version=spec.version if spec else None,
            ttl=None,
            ignore=spec.ignore if spec else (),
        )
    final = spec
    if final.stream == "sync":

        @functools.wraps(original)
        def stream_double(*args: Any, **kwargs: Any) -> Iterator[Any]:
            return (yield from session.stream(final, original, args, kwargs))

        return stream_double
    if final.stream == "async":

        @functools.wraps(original)
        async def async_stream_double(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            source = cast(AsyncGenerator[Any, None], session.stream_async(final, original, args, kwargs))
            try:
                async for chunk in source:
                    yield chunk
            finally:
                await source.aclose()

        return async_stream_double
    if final.is_async:

        @functools.wraps(original)
        async def async_double(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the user's frames, not ours
            return await session.call_async(final, original, args, kwargs)

        return async_double

    @functools.wraps(original)
    def sync_double(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        return session.call(final, original, args, kwargs)

    return sync_double
