"""One replayed call in flight: how the replay decided to answer it, and how it ends.

``ReplaySession._begin_serving`` makes a ``Serving`` (served from the tape, a fake, or live) or a
``Recorded`` (the replay records); the session's sync and async call paths then ``invoke`` it and
end it with ``done`` or ``fail``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Link, SpanContext, TraceFlags

from otel_agent_replay.capture import CapturedResult
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import Prepared, StepInFlight, ToolSpec, call_recorded, call_recorded_async
from otel_agent_replay.tape import Step

from ._append import AppendedStep

if TYPE_CHECKING:
    from ._runs import ReplayRun
    from ._session import ReplaySession


@dataclass(frozen=True, slots=True)
class Decision:
    """How a replay answers one call (``ReplaySession._decide``)."""

    how: str
    """``tape`` (serve a recorded step), ``fallback`` (the user's fake), ``live`` (run it) or
    ``out_of_bounds`` (answer the ``unexpected_tool_call`` error result)."""
    step: Step | None = None
    override: Any = None
    has_override: bool = False
    fake: Callable[..., Any] | None = None
    append: bool = False


class Serving:
    """One replayed call in flight: its replay span and appended step, if any, and how it ends."""

    __slots__ = ("bound", "decision", "pending", "prep", "session", "spec", "step")

    def __init__(
        self,
        session: ReplaySession,
        spec: ToolSpec,
        prep: Prepared,
        decision: Decision,
        step: StepInFlight | None,
        pending: AppendedStep | None,
        bound: ReplayRun,
    ) -> None:
        self.session = session
        self.spec = spec
        self.prep = prep
        self.decision = decision
        self.step = step
        self.pending = pending
        self.bound = bound

    def _ended(self) -> None:
        if self.decision.step is not None:
            self.bound.served(self.decision.step)

    def invoke(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The recorded result (or exception), or what the fake or the live function returns."""
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        how = self.decision.how
        if how == "tape":
            return self.session._from_tape(self.decision, self.spec)
        if how == "out_of_bounds":
            return dict(self.decision.override)
        return (self.decision.fake or fn)(*args, **kwargs)

    def fail(self, exc: BaseException) -> None:
        self._ended()
        self.session._observe(self.spec, self.prep, None, exc)
        if self.pending is not None:
            self.pending.fail(exc)
        if self.step is not None:
            self.step.fail(exc)

    def done(self, result: object) -> None:
        self._ended()
        self.session._observe(self.spec, self.prep, result, None)
        if self.pending is not None:
            self.pending.finish(result)
        if self.step is not None:
            self.step.finish(result, as_recorded(self.decision))


class Recorded:
    """One call while the replay records (modes ``once`` on a missing tape and ``all``): it runs live."""

    __slots__ = ("args", "kwargs", "seq", "session", "spec")

    def __init__(
        self, session: ReplaySession, spec: ToolSpec, seq: int, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.session = session
        self.spec = spec
        self.seq = seq
        self.args = args
        self.kwargs = kwargs

    def invoke(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the real function as a recorded step (a coroutine to await for async functions)."""
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        run = call_recorded_async if self.spec.is_async else call_recorded
        return run(self.spec, fn, args, kwargs)

    def fail(self, exc: BaseException) -> None:
        self.session._observe_recorded(self.spec, self.seq, self.args, self.kwargs, None, exc)

    def done(self, result: object) -> None:
        self.session._observe_recorded(self.spec, self.seq, self.args, self.kwargs, result, None)


def as_recorded(decision: Decision) -> CapturedResult | None:
    """The recorded result's JSON when it was served as recorded: no need to capture it again."""
    step = decision.step
    if decision.how != "tape" or decision.has_override or step is None or step.result_json is None:
        return None
    type_json = step.attributes.get(A.RESULT_TYPE)
    return CapturedResult(
        step.result_json, step.result_sha256, step.result_truncated, type_json if isinstance(type_json, str) else None
    )


def links(trace_id: str, span_id: str) -> list[Link]:
    """A link to a recorded span (none for a missing or invalid id)."""
    if not trace_id or not span_id or set(span_id) == {"0"}:
        return []
    try:
        ctx = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
    except ValueError:
        return []
    return [Link(ctx)]


def step_links(step: Step | None) -> list[Link]:
    """The link from a replay span to the recorded step it serves."""
    return links(step.trace_id, step.span_id) if step is not None else []
