"""What ``inspect.unwrap(tool)`` finds: the function for reading, fenced for calling during a replay.

``functools.wraps`` sets ``__wrapped__`` so that readers reach the decorated function: frameworks
call ``inspect.unwrap`` (or ``inspect.signature``, which follows it) to read parameters, type
hints, the docstring and the source. Calling what they find would run the function's body outside
every rule of a replay: a write tool's body would write, uncounted. So a decorated tool's
``__wrapped__`` is a *twin* of the function: for readers it is the function (its name, qualified
name, module, docstring, annotations, globals, signature, source location, and whether it is a
coroutine or generator function); called, it runs the function, except that during a replay a tool
that is not read-only goes through the replay as the decorated tool does (served, stubbed or
refused, and counted), and from a thread outside an active replay's context it is refused. A
read-only tool and a model call run as the bare function would (not recorded, not served): an
unwrapped call is how a tool's own unit test calls it, and a read-only body harms nothing.

The twin is a real function whose code is ours, given the function's globals and, so that
``inspect.getsource`` reads the function's own lines, its file name and first line number; its
body is one call, so a traceback through it shows the tool's own ``def``.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, cast

from otel_agent_replay.core import StepKind

from ._outside import ACTIVE_REPLAYS, refuse_outside
from ._runtime import current_recording, current_replay
from ._spec import ToolSpec

__all__ = ["unwrap_twin"]


def unwrap_twin(fn: Callable[..., Any], spec: ToolSpec) -> Callable[..., Any]:
    """The twin of ``fn`` that a decorated tool's ``__wrapped__`` names (see the module)."""
    fenced = spec.kind == StepKind.TOOL and not spec.read_only

    def gate(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """None to run the function; else the replay that serves the call (refusing outside calls)."""
        if not fenced:
            return None
        session = current_replay.get()
        if session is None and ACTIVE_REPLAYS and current_recording.get() is None:
            refuse_outside(spec)  # a replay is active, but not in this context: fail closed
        return session

    def through(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        session = gate(args, kwargs)
        return fn(*args, **kwargs) if session is None else session.call(spec, fn, args, kwargs)

    async def through_async(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        session = gate(args, kwargs)
        return await (fn(*args, **kwargs) if session is None else session.call_async(spec, fn, args, kwargs))

    def through_stream(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[Any]:
        session = gate(args, kwargs)
        source = fn(*args, **kwargs) if session is None else session.stream(spec, fn, args, kwargs)
        return cast(Iterator[Any], source)

    def through_stream_async(args: tuple[Any, ...], kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        session = gate(args, kwargs)
        source = fn(*args, **kwargs) if session is None else session.stream_async(spec, fn, args, kwargs)
        return cast(AsyncIterator[Any], source)

    twin: Callable[..., Any]
    if spec.stream == "sync":

        def twin(*args: Any, **kwargs: Any) -> Any:
            return (yield from through_stream(args, kwargs))

    elif spec.stream == "async":

        async def twin(*args: Any, **kwargs: Any) -> Any:
            async for chunk in through_stream_async(args, kwargs):
                yield chunk

    elif spec.is_async:

        async def twin(*args: Any, **kwargs: Any) -> Any:
            return await through_async(args, kwargs)

    else:

        def twin(*args: Any, **kwargs: Any) -> Any:
            return through(args, kwargs)

    twin = _as_the_function(twin, fn)
    functools.update_wrapper(twin, fn)
    vars(twin).pop("__wrapped__", None)  # unwrap stops here, even when fn itself wraps another
    twin.__signature__ = spec.signature  # type: ignore[attr-defined]
    return twin


def _as_the_function(twin: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    """``twin`` rebuilt with ``fn``'s globals, file and first line (when ``fn`` is a plain function)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or not isinstance(code, types.CodeType):
        return twin
    assert isinstance(twin, types.FunctionType)
    changes: dict[str, Any] = {
        "co_filename": code.co_filename,
        "co_firstlineno": code.co_firstlineno,
        "co_name": code.co_name,
    }
    if hasattr(code, "co_qualname"):
        changes["co_qualname"] = code.co_qualname
    rebuilt = types.FunctionType(twin.__code__.replace(**changes), fn.__globals__, fn.__name__, None, twin.__closure__)
    rebuilt.__kwdefaults__ = None
    if inspect.isfunction(rebuilt):
        return rebuilt
    return twin  # pragma: no cover - FunctionType always makes a function
