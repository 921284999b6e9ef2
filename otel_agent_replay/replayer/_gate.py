"""The side-effect gate of a live ``conform`` call: read-only steps run, anything else is refused.

``conform`` calls a read-only tool for real. Its body is the user's code, and may call other
decorated tools; outside a replay those calls would simply run, so a read-only tool that calls a
write tool would write. The gate is installed as the active replay (the context variable every
``@tool`` wrapper asks first) for the length of the live call, and is noted as an active replay
for the process, so the decorated calls made in threads that did not receive its context are
asked too. It serves nothing from a tape: a read-only tool, and a model call, runs as it would live;
a tool that is not read-only (``write``, ``external`` or undeclared) is refused with
``SideEffectRefused`` and noted, whether or not the body then catches the error, so ``conform``
reports it and fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any

from otel_agent_replay.core import SideEffect, SideEffectRefused, StepKind
from otel_agent_replay.instrumentation import ToolSpec, current_replay, replay_ended, replay_started
from otel_agent_replay.integrations import hold_mcp

if TYPE_CHECKING:
    from opentelemetry.trace import Link, Span

__all__ = ["LiveGate"]


class LiveGate:
    """A replay hook that lets read-only steps run live and refuses the rest (see the module)."""

    spans = False
    """No run spans: a live conformance call is not a recording."""

    def __init__(self, tool: str, tape_path: str | None = None) -> None:
        self.tool = tool
        self.tape_path = tape_path
        self.refused: list[str] = []
        """The tools refused, in call order (a name per refused call)."""
        self._token: Any = None
        self._release: Callable[[], None] = _nothing

    @property
    def pace(self) -> bool:
        return False

    def __enter__(self) -> LiveGate:
        self._release = hold_mcp()  # an MCP client's call_tool in the body is asked too
        self._token = current_replay.set(self)
        replay_started(self)
        return self

    def __exit__(self, *exc: object) -> None:
        replay_ended(self)
        current_replay.reset(self._token)
        self._release()

    def _refusal(self, spec: ToolSpec, where: str = "") -> SideEffectRefused | None:
        if spec.kind != StepKind.TOOL or (spec.side_effect == SideEffect.READ_ONLY and spec.vouched):
            return None
        self.refused.append(spec.name)
        effect = spec.side_effect.value if spec.side_effect is not None else "undeclared"
        return SideEffectRefused(
            f"{spec.name} ({effect}) was called{where} during the live conformance call of the read-only tool "
            f"{self.tool}, so it was refused and never ran: conform runs only read-only steps. Fix: a tool that "
            f"calls {spec.name} is not read-only; declare {self.tool} with side_effect='write' (conform then "
            f"skips it), or move the {spec.name} call out of it"
        )

    def _check(self, spec: ToolSpec) -> None:
        refusal = self._refusal(spec)
        if refusal is not None:
            raise refusal

    def outside_call(self, spec: Any) -> BaseException | None:
        """A decorated call from a thread without the gate's context: refused the same way."""
        return self._refusal(spec, " from a thread without the call's context")

    def call(self, spec: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self._check(spec)
        return fn(*args, **kwargs)

    async def call_async(
        self, spec: Any, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        self._check(spec)
        return await fn(*args, **kwargs)

    def stream(
        self, spec: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Generator[Any, Any, Any]:
        self._check(spec)
        return (yield from fn(*args, **kwargs))

    async def stream_async(
        self, spec: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]:
        self._check(spec)
        async for chunk in fn(*args, **kwargs):
            yield chunk

    def begin_run(
        self, agent_name: str, run_id: str, input_hash: str | None = None
    ) -> tuple[dict[str, Any], list[Link], object]:
        return {}, [], None

    def end_run(self, output: object, span: Span) -> None:
        return None


def _nothing() -> None:
    pass
