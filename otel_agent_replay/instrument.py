"""Instrumentation: ``@tool``, ``@model_call`` and ``agent_run``.

A run is one parent span; each tool or model call inside it is a child span with the
step attributes of the span schema. The decorated function keeps its signature,
annotations, name and docstring, so frameworks that build tool schemas from the
function see the original.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind, Status, StatusCode

from . import attributes as A
from .canonical import bind_arguments, context_parameters, hash_text
from .capture import (
    CapturedArgs,
    capture_args,
    capture_json,
    capture_result,
    capture_value,
    messages_json,
    usage_tokens,
)
from .errors import ConfigurationError
from .redact import Redactor
from .runtime import (
    DEFAULT_CAPTURE,
    Capture,
    ReplayHook,
    RunState,
    StepIds,
    active_run,
    current_recording,
    current_replay,
    current_run,
    current_step,
    run_ended,
    run_started,
)

F = TypeVar("F", bound=Callable[..., Any])

_tracer = trace.get_tracer(A.INSTRUMENTATION_NAME, "0.1.0")

SPEC_ATTRIBUTE = "__agent_replay_tool__"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a decorated tool or model function declared."""

    name: str
    kind: str
    """``tool`` or ``llm``."""
    side_effect: str | None
    version: str | None
    ttl: float | None
    ignore: frozenset[str]
    leave_out: frozenset[str]
    signature: inspect.Signature
    is_async: bool
    provider: str | None = None
    model: str | None = None

    @property
    def read_only(self) -> bool:
        """True only for tools that declared ``side_effect="read_only"``."""
        return self.side_effect == A.SIDE_EFFECT_READ_ONLY


def tool_spec(fn: object) -> ToolSpec | None:
    """The spec of a function decorated with ``@tool`` or ``@model_call``, else None."""
    spec = getattr(fn, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, ToolSpec) else None


def _ttl_seconds(ttl: float | _dt.timedelta | None) -> float | None:
    if ttl is None:
        return None
    seconds = ttl.total_seconds() if isinstance(ttl, _dt.timedelta) else float(ttl)
    if seconds <= 0:
        raise ConfigurationError(f"ttl must be positive, got {ttl!r}; give seconds or a timedelta")
    return seconds


def make_spec(
    fn: Callable[..., Any],
    *,
    name: str | None,
    kind: str,
    side_effect: str | None,
    version: str | None,
    ttl: float | _dt.timedelta | None,
    ignore: Iterable[str],
    provider: str | None = None,
    model: str | None = None,
) -> ToolSpec:
    """Check a tool's declaration and build its spec (``ConfigurationError`` when invalid)."""
    if not callable(fn):
        raise ConfigurationError(f"@{'tool' if kind == A.KIND_TOOL else 'model_call'} needs a function, got {fn!r}")
    if side_effect is not None and side_effect not in A.SIDE_EFFECTS:
        allowed = ", ".join(sorted(A.SIDE_EFFECTS))
        raise ConfigurationError(
            f"{getattr(fn, '__qualname__', fn)!r}: side_effect={side_effect!r} is not one of {allowed}"
        )
    signature = inspect.signature(fn)
    ignored = frozenset([ignore] if isinstance(ignore, str) else ignore)
    unknown = ignored - set(signature.parameters)
    if unknown:
        raise ConfigurationError(
            f"{fn.__qualname__}: ignore= names {sorted(unknown)} that are not parameters "
            f"(parameters: {list(signature.parameters)})"
        )
    is_method = "." in fn.__qualname__.rsplit("<locals>.", 1)[-1]
    leave_out = context_parameters(signature, is_method=is_method) | ignored
    return ToolSpec(
        name=name or fn.__name__,
        kind=kind,
        side_effect=side_effect,
        version=version,
        ttl=_ttl_seconds(ttl),
        ignore=ignored,
        leave_out=leave_out,
        signature=signature,
        is_async=inspect.iscoroutinefunction(fn),
        provider=provider,
        model=model,
    )


class _Step:
    """One step in flight: its span, its context tokens, and how to finish it."""

    __slots__ = ("capture", "ids", "run", "span", "spec", "tokens")

    def __init__(
        self, spec: ToolSpec, run: RunState, ids: StepIds, span: Span, tokens: list[Callable[[], None]]
    ) -> None:
        self.spec = spec
        self.run = run
        self.ids = ids
        self.span = span
        self.tokens = tokens
        self.capture = run.capture

    def _close(self) -> None:
        for undo in reversed(self.tokens):
            undo()
        self.span.end()
        if self.spec.kind == A.KIND_LLM:
            self.run.model_step_done(self.ids.step_id)

    def finish(self, result: object) -> None:
        try:
            captured = capture_result(result, self.capture)
            span = self.span
            if self.spec.kind == A.KIND_TOOL:
                span.set_attribute(A.GEN_AI_TOOL_CALL_RESULT, captured.json)
            else:
                span.set_attribute(A.MODEL_RESULT, captured.json)
                inp, out = usage_tokens(result)
                if inp is not None:
                    span.set_attribute(A.GEN_AI_USAGE_INPUT_TOKENS, inp)
                if out is not None:
                    span.set_attribute(A.GEN_AI_USAGE_OUTPUT_TOKENS, out)
                messages = messages_json(capture_value(result, self.capture))
                if messages is not None:
                    span.set_attribute(A.GEN_AI_OUTPUT_MESSAGES, messages)
            if captured.truncated:
                span.set_attribute(A.RESULT_TRUNCATED, True)
                span.set_attribute(A.RESULT_SHA256, captured.sha256 or "")
        finally:
            self._close()

    def fail(self, exc: BaseException) -> None:
        try:
            record_error(self.span, exc, self.capture.redactor)
        finally:
            self._close()


def record_error(span: Span, exc: BaseException, redactor: Redactor) -> None:
    """Status ERROR and an ``exception`` event, with the message redacted."""
    message = redactor.redact_text(str(exc))
    span.add_event(
        A.EXCEPTION_EVENT,
        {A.EXCEPTION_TYPE: f"{type(exc).__module__}.{type(exc).__qualname__}", A.EXCEPTION_MESSAGE: message},
    )
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))


@dataclass(frozen=True, slots=True)
class Prepared:
    """A call bound, captured and given its identity, before any span starts."""

    run: RunState
    ids: StepIds
    captured: CapturedArgs
    in_context: bool
    """False when the call joined the only active run from a thread without its context."""


def prepare(spec: ToolSpec, run: RunState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Prepared:
    """Bind and capture a call's arguments and take its seq and step ids.

    Raises ``TypeError`` exactly as the call itself would when the arguments do not fit.
    """
    bound = bind_arguments(spec.signature, args, kwargs, spec.leave_out)
    captured = capture_args(spec.name, bound, run.capture)
    in_context = current_run.get() is run
    enclosing = current_step.get() if in_context else None
    return Prepared(run, run.next_step(spec.name, enclosing), captured, in_context)


def step_attributes(spec: ToolSpec, prep: Prepared) -> tuple[str, dict[str, Any]]:
    """The span name and start attributes of a step."""
    run, ids, captured = prep.run, prep.ids, prep.captured
    if spec.kind == A.KIND_TOOL:
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: spec.name,
            A.GEN_AI_TOOL_CALL_ID: f"{run.run_id}:{ids.seq}",
            A.GEN_AI_TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
            A.GEN_AI_TOOL_CALL_ARGUMENTS: captured.json,
        }
        span_name = A.tool_span_name(spec.name)
        if spec.side_effect is not None:
            attrs[A.SIDE_EFFECT] = spec.side_effect
    else:
        model = spec.model or _model_from_args(captured.value) or spec.name
        attrs = {A.GEN_AI_OPERATION_NAME: A.OP_CHAT, A.GEN_AI_REQUEST_MODEL: model, A.FUNCTION: spec.name}
        if spec.provider:
            attrs[A.GEN_AI_PROVIDER_NAME] = spec.provider
        attrs[A.MODEL_ARGUMENTS] = captured.json
        messages = messages_json(captured.value)
        if messages is not None:
            attrs[A.GEN_AI_INPUT_MESSAGES] = messages
        span_name = A.model_span_name(model)
    attrs[A.RUN_ID] = run.run_id
    attrs[A.STEP_ID] = ids.step_id
    attrs[A.PARENT_STEP_ID] = ids.parent_step_id
    attrs[A.SEQ] = ids.seq
    attrs[A.KIND] = spec.kind
    attrs[A.CALL_KEY] = captured.call_key
    if spec.version is not None:
        attrs[A.TOOL_VERSION] = spec.version
    if spec.ttl is not None:
        expires = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=spec.ttl)
        attrs[A.EXPIRES_AT] = expires.isoformat(timespec="seconds")
    return span_name, attrs


def start_step(spec: ToolSpec, prep: Prepared, links: Sequence[Link] = ()) -> _Step:
    """Start the step's span as the current span; ``finish`` or ``fail`` ends it."""
    run = prep.run
    span_name, attrs = step_attributes(spec, prep)
    undo: list[Callable[[], None]] = []
    if current_recording.get() is not run.recording:
        rec_token = current_recording.set(run.recording)
        undo.append(lambda: current_recording.reset(rec_token))
    parent_ctx = None if prep.in_context else trace.set_span_in_context(run.span)
    span = _tracer.start_span(span_name, context=parent_ctx, kind=SpanKind.INTERNAL, attributes=attrs, links=links)
    ctx_token = otel_context.attach(trace.set_span_in_context(span, parent_ctx))
    undo.append(lambda: otel_context.detach(ctx_token))
    step_token = current_step.set(prep.ids.step_id)
    undo.append(lambda: current_step.reset(step_token))
    if not prep.in_context:
        run_token = current_run.set(run)
        undo.append(lambda: current_run.reset(run_token))
    return _Step(spec, run, prep.ids, span, undo)


def _begin(spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Step | None:
    """Start a recorded step, or return None when there is no run to record it in."""
    run = active_run()
    if run is None:
        return None
    try:
        prep = prepare(spec, run, args, kwargs)
    except TypeError:
        return None  # the call itself will raise the same TypeError
    return start_step(spec, prep)


def _model_from_args(value: object) -> str | None:
    if isinstance(value, dict):
        model = value.get("model")
        if isinstance(model, str) and model:
            return model
    return None


def call_recorded(spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the real function, as a recorded step when a run is active."""
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


async def call_recorded_async(
    spec: ToolSpec, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``call_recorded`` for coroutine functions."""
    step = _begin(spec, args, kwargs)
    if step is None:
        return await fn(*args, **kwargs)
    try:
        result = await fn(*args, **kwargs)
    except BaseException as exc:
        step.fail(exc)
        raise
    step.finish(result)
    return result


def _wrap(fn: F, spec: ToolSpec) -> F:
    if spec.is_async:
        async_fn = cast(Callable[..., Awaitable[Any]], fn)

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = current_replay.get()
            if session is not None:
                return await session.call_async(spec, async_fn, args, kwargs)
            return await call_recorded_async(spec, async_fn, args, kwargs)

        wrapper: Callable[..., Any] = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            session = current_replay.get()
            if session is not None:
                return session.call(spec, fn, args, kwargs)
            return call_recorded(spec, fn, args, kwargs)

        wrapper = sync_wrapper
    setattr(wrapper, SPEC_ATTRIBUTE, spec)
    return cast(F, wrapper)


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    side_effect: str | None = None,
    version: str | None = None,
    ttl: float | _dt.timedelta | None = None,
    ignore: Iterable[str] = (),
) -> Callable[[F], F]: ...
def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    side_effect: str | None = None,
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
        spec = make_spec(
            f, name=name, kind=A.KIND_TOOL, side_effect=side_effect, version=version, ttl=ttl, ignore=ignore
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
        spec = make_spec(
            f,
            name=name,
            kind=A.KIND_LLM,
            side_effect=None,
            version=version,
            ttl=None,
            ignore=ignore,
            provider=provider,
            model=model,
        )
        return _wrap(f, spec)

    return decorate(fn) if fn is not None else decorate


class RunHandle:
    """The handle ``agent_run`` yields: ids of the run and ``set_output``."""

    __slots__ = ("_capture", "_output_set", "agent_name", "output", "run_id", "span", "span_id", "trace_id")

    def __init__(self, run_id: str, agent_name: str, span: Span, capture: Capture) -> None:
        ctx = span.get_span_context()
        self.run_id = run_id
        self.agent_name = agent_name
        self.span = span
        self.trace_id = f"{ctx.trace_id:032x}"
        self.span_id = f"{ctx.span_id:016x}"
        self.output: object = None
        self._output_set = False
        self._capture = capture

    def set_output(self, value: object) -> None:
        """Record the run's final output (``agent_replay.output``)."""
        self.output = value
        self._output_set = True
        self.span.set_attribute(A.OUTPUT, capture_json(value, self._capture))

    def __repr__(self) -> str:
        return f"RunHandle(run_id={self.run_id!r}, agent_name={self.agent_name!r}, trace_id={self.trace_id!r})"


class agent_run:
    """One run of an agent: a parent span ``invoke_agent {agent_name}`` for its steps.

    Use as ``with agent_run("planner") as run:``, ``async with``, or as a decorator
    (``@agent_run("planner")``: each call is a new run whose input is the call's
    arguments and whose output is its return value). Inside an existing span the run
    becomes that span's child.
    """

    def __init__(
        self,
        agent_name: str,
        *,
        run_id: str | None = None,
        agent_version: str | None = None,
        task: str | None = None,
        input: object = None,
        conversation_id: str | None = None,
    ) -> None:
        if not agent_name or not isinstance(agent_name, str):
            raise ConfigurationError(f"agent_run needs an agent name (a non-empty string), got {agent_name!r}")
        self.agent_name = agent_name
        self.run_id = run_id
        self.agent_version = agent_version
        self.task = task
        self.input = input
        self.conversation_id = conversation_id
        self._state: list[tuple[RunState, RunHandle, list[Callable[[], None]], ReplayHook | None]] = []

    def _options(self, **changes: Any) -> agent_run:
        kw: dict[str, Any] = {
            "run_id": self.run_id,
            "agent_version": self.agent_version,
            "task": self.task,
            "input": self.input,
            "conversation_id": self.conversation_id,
        }
        kw.update(changes)
        return agent_run(self.agent_name, **kw)

    def __enter__(self) -> RunHandle:
        recording = current_recording.get()
        capture = cast(Capture, getattr(recording, "capture", DEFAULT_CAPTURE))
        session = current_replay.get()
        run_id = self.run_id or uuid.uuid4().hex
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_AGENT_NAME: self.agent_name,
            A.RUN_ID: run_id,
            A.MODE: A.MODE_RECORD,
            A.SCHEMA_VERSION_ATTR: A.SCHEMA_VERSION,
            A.RECORDED_AT: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds"),
        }
        if self.conversation_id is not None:
            attrs[A.GEN_AI_CONVERSATION_ID] = self.conversation_id
        if self.agent_version is not None:
            attrs[A.AGENT_VERSION] = self.agent_version
        if self.task is not None:
            attrs[A.TASK] = self.task
        if self.input is not None:
            text = capture_json(self.input, capture, canonical=True)
            attrs[A.INPUT] = text
            attrs[A.INPUT_HASH] = hash_text(text)
        links: list[Link] = []
        replay_run: object | None = None
        if session is not None:
            extra, links, replay_run = session.begin_run(self.agent_name, run_id)
            attrs.update(extra)
        undo: list[Callable[[], None]] = []
        span: Span
        if session is not None and not session.spans:
            span = INVALID_SPAN
        else:
            span = _tracer.start_span(
                A.run_span_name(self.agent_name), kind=SpanKind.INTERNAL, attributes=attrs, links=links
            )
            ctx_token = otel_context.attach(trace.set_span_in_context(span))
            undo.append(lambda: otel_context.detach(ctx_token))
        state = RunState(run_id, self.agent_name, span, capture, recording)
        state.replay = replay_run
        handle = RunHandle(run_id, self.agent_name, span, capture)
        run_token = current_run.set(state)
        undo.append(lambda: current_run.reset(run_token))
        step_token = current_step.set(None)
        undo.append(lambda: current_step.reset(step_token))
        run_started(state)
        self._state.append((state, handle, undo, session))
        return handle

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        state, _handle, undo, session = self._state.pop()
        run_ended(state)
        try:
            if exc is not None:
                record_error(state.span, exc, state.capture.redactor)
        finally:
            for step in reversed(undo):
                step()
            state.span.end()
            if session is not None and state.replay is not None:
                session.end_run(state.replay, exc)

    async def __aenter__(self) -> RunHandle:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        signature = inspect.signature(fn)

        def run_for(args: tuple[Any, ...], kwargs: dict[str, Any]) -> agent_run:
            if self.input is not None:
                return self._options()
            try:
                bound = bind_arguments(signature, args, kwargs)
            except TypeError:
                bound = {}
            return self._options(input=bound or None)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                async with run_for(args, kwargs) as handle:
                    result = await fn(*args, **kwargs)
                    handle.set_output(result)
                    return result

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            with run_for(args, kwargs) as handle:
                result = fn(*args, **kwargs)
                handle.set_output(result)
                return result

        return cast(F, sync_wrapper)
