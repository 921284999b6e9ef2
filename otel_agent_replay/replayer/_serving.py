"""One replayed call in flight: how the replay decided to answer it, and how it ends.

``ReplaySession._begin_serving`` makes a ``Serving`` (served from the tape, a fake, or live) or a
``Recorded`` (the replay records); the session's sync and async call paths then ``invoke`` it and
end it with ``done`` or ``fail``. A tool call served from the tape as recorded gets its replay span
from a ``HitSpan``: made in one ``start_span`` when the call ends, with the recorded result's JSON text.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, TraceFlags

from otel_agent_replay.capture import CapturedResult
from otel_agent_replay.core import __version__
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import (
    Prepared,
    StepInFlight,
    ToolSpec,
    call_recorded,
    call_recorded_async,
    record_error,
    step_attributes,
)
from otel_agent_replay.tape import Step

from ._append import AppendedStep

if TYPE_CHECKING:
    from ._runs import ReplayRun


@dataclass(frozen=True, slots=True)
class Decision:
    """How a replay answers one call (``Decider.decide`` in ``_decide``)."""

    how: str
    """``tape`` (serve a recorded step), ``fallback`` (the user's fake), ``live`` (run it) or
    ``out_of_bounds`` (answer the ``unexpected_tool_call`` error result)."""
    step: Step | None = None
    override: Any = None
    has_override: bool = False
    fake: Callable[..., Any] | None = None
    append: bool = False


class ServingSession(Protocol):
    """What serving a call needs of its replay (``ReplaySession`` in ``_session`` is the one): named here
    so that this module, ``_streaming`` and ``_doubles`` depend on it and not on ``_session``, which
    depends on them."""

    tape_path: str | None

    @property
    def pace(self) -> bool: ...

    def call(self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...

    def call_async(
        self, spec: ToolSpec, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Awaitable[Any]: ...

    def stream(
        self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Iterator[Any]: ...

    def stream_async(
        self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]: ...

    def _begin_serving(self, spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Serving | Recorded: ...

    def _from_tape(self, decision: Decision, spec: ToolSpec) -> Any: ...

    def _observe(self, spec: ToolSpec, prep: Prepared, result: object, error: BaseException | None) -> None: ...

    def _observe_recorded(
        self,
        spec: ToolSpec,
        seq: int,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: object,
        error: BaseException | None,
    ) -> None: ...


_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_INTERNAL = SpanKind.INTERNAL


def replay_tracer() -> trace.Tracer:
    """The tracer of replay spans: the instrumentation's name and version, as ``start_step``'s. Taken once
    per replay, so a hit's span starts on the provider's own tracer rather than through a proxy."""
    return trace.get_tracer(A.INSTRUMENTATION_NAME, __version__)


class HitSpan:
    """The replay span of a tool call served from the tape as recorded (no override, not a stream).

    Nothing of the agent runs inside such a call, so the span need not be the current span while
    it is served: it is made when the call ends, in one ``start_span`` with every attribute (the
    recorded result's JSON text as it is on the tape, not encoded again) and the start time taken
    when the call began, then ended at once. The span carries what ``start_step`` + ``finish`` (or
    ``fail``) would have put on it, in the same order; it skips the context attach and detach, the
    step's context variables and a second attribute pass.
    """

    __slots__ = ("links", "prep", "spec", "start_ns", "step", "tracer")

    def __init__(self, tracer: trace.Tracer, spec: ToolSpec, prep: Prepared, step: Step, links: Sequence[Link]) -> None:
        self.tracer = tracer
        self.spec = spec
        self.prep = prep
        self.step = step
        self.links = links
        self.start_ns = time.time_ns()

    def _start(self, name: str, attrs: dict[str, Any]) -> Span:
        prep = self.prep
        parent = None if prep.in_context else trace.set_span_in_context(prep.run.span)
        return self.tracer.start_span(
            name, context=parent, kind=_INTERNAL, attributes=attrs, links=self.links, start_time=self.start_ns
        )

    def finish(self, result: object) -> None:
        """End the span with the recorded result (the tape's JSON text, the facts the tool's spec reads from the
        served ``result``, such as an HTTP step's status, its type, its truncation)."""
        step = self.step
        spec = self.spec
        name, attrs = step_attributes(spec, self.prep)
        attrs[A.GEN_AI_TOOL_CALL_RESULT] = step.result_json
        attrs.update(spec.result_facts(result))
        type_json = step.attributes.get(A.RESULT_TYPE)
        if isinstance(type_json, str):
            attrs[A.RESULT_TYPE] = type_json
        if step.result_truncated:
            attrs[A.RESULT_TRUNCATED] = True
            attrs[A.RESULT_SHA256] = step.result_sha256 or ""
        self._start(name, attrs).end()

    def fail(self, exc: BaseException) -> None:
        """End the span as failed (the recorded exception, raised again), as ``StepInFlight.fail`` does."""
        span = self._start(*step_attributes(self.spec, self.prep))
        try:
            record_error(span, exc, self.prep.run.capture.redactor)
        finally:
            span.end()


def serves_as_recorded(spec: ToolSpec, decision: Decision) -> bool:
    """Whether a call's replay span can be a ``HitSpan``: a tool call (not a stream) served from the
    tape as recorded, its result's JSON on the tape, or its recorded exception raised again."""
    step = decision.step
    return (
        decision.how == "tape"
        and not decision.has_override
        and step is not None
        and not spec.is_llm
        and spec.stream is None
        and (step.result_json is not None or step.error is not None)
    )


class Serving:
    """One replayed call in flight: its replay span and appended step, if any, and how it ends."""

    __slots__ = ("bound", "decision", "hit", "pending", "prep", "session", "spec", "step")

    def __init__(
        self,
        session: ServingSession,
        spec: ToolSpec,
        prep: Prepared,
        decision: Decision,
        step: StepInFlight | None,
        pending: AppendedStep | None,
        bound: ReplayRun,
        hit: HitSpan | None = None,
    ) -> None:
        self.session = session
        self.spec = spec
        self.prep = prep
        self.decision = decision
        self.step = step
        self.pending = pending
        self.bound = bound
        self.hit = hit

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
        elif self.hit is not None:
            self.hit.fail(exc)

    def done(self, result: object) -> None:
        self._ended()
        self.session._observe(self.spec, self.prep, result, None)
        if self.pending is not None:
            self.pending.finish(result)
        if self.step is not None:
            captured = as_recorded(self.decision)
            recorded = self.decision.step.attributes if captured is not None and self.decision.step else None
            self.step.finish(result, captured, recorded)
        elif self.hit is not None:
            self.hit.finish(result)


class Recorded:
    """One call while the replay records (modes ``once`` on a missing tape and ``all``): it runs live."""

    __slots__ = ("args", "kwargs", "seq", "session", "spec")

    def __init__(
        self, session: ServingSession, spec: ToolSpec, seq: int, args: tuple[Any, ...], kwargs: dict[str, Any]
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
    if not trace_id or not span_id or not span_id.strip("0"):
        return []
    try:
        ctx = SpanContext(int(trace_id, 16), int(span_id, 16), True, _SAMPLED)
    except ValueError:
        return []
    return [Link(ctx)]


def step_links(step: Step | None) -> list[Link]:
    """The link from a replay span to the recorded step it serves."""
    return links(step.trace_id, step.span_id) if step is not None else []
