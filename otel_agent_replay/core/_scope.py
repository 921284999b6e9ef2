"""One base for the SDK's blocks (``record``, ``replay``, ``agent_run``): ``with``, ``async with``
and decorator, written once.

A subclass says how the block starts (``_start``: the handle the ``with`` statement binds, and
the state its end needs) and how it ends (``_stop``). ``__enter__`` and ``__aenter__`` both call
``_start``; ``__exit__`` and ``__aexit__`` both call ``_stop``. Entered blocks nest: each entry
keeps its own state, so one object can be entered again while it is active.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

H = TypeVar("H")
S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Any])


class Scope(Generic[H, S]):
    """A block that is a context manager, an async context manager and a decorator."""

    def __init__(self) -> None:
        self._entered: list[S] = []

    def _start(self) -> tuple[H, S]:
        """Begin the block: the handle ``with ... as`` binds, and the state ``_stop`` receives."""
        raise NotImplementedError

    def _stop(self, state: S, error: BaseException | None) -> None:
        """End the block; ``error`` is the exception leaving it, if any."""
        raise NotImplementedError

    def _for_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Scope[H, Any]:
        """The block one call of a decorated function runs in (this one, unless a subclass derives one)."""
        return self

    def _returned(self, handle: H, result: object) -> None:
        """Learn what a decorated function returned (nothing, unless a subclass keeps it)."""

    def __enter__(self) -> H:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        handle, state = self._start()
        self._entered.append(state)
        return handle

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        self._stop(self._entered.pop(), exc)

    async def __aenter__(self) -> H:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        """Run each call of ``fn`` (sync or async) inside the block."""
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True  # pytest shows the user's frames, not ours
                block = self._for_call(args, kwargs)
                async with block as handle:
                    result = await fn(*args, **kwargs)
                    block._returned(handle, result)
                    return result

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # pytest shows the user's frames, not ours
            block = self._for_call(args, kwargs)
            with block as handle:
                result = fn(*args, **kwargs)
                block._returned(handle, result)
                return result

        return cast(F, sync_wrapper)
