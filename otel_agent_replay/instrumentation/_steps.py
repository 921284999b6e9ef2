"""The life of one step: bind and capture the call, start its span, finish or fail it.

Recording and replay share this: a replayed call is prepared and spanned exactly like a
recorded one, so a replay's spans are a full record of the replayed behaviour.
"""

from __future__ import annotations

import datetime as _dt
import threading
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from otel_agent_replay.capture import (
    UNNAMED,
    CapturedArgs,
    CapturedResult,
    Redactor,
    capture_args,
    capture_result,
    capture_value,
    exception_facts,
    usage_tokens,
)
from otel_agent_replay.conversation import answer_of, dumps, prompt_of, redact_stream
from otel_agent_replay.core import TapeWarning, __version__
from otel_agent_replay.core import attributes as A

from ._runtime import RunState, StepIds, current_recording, current_run, current_step, step_run
from ._spec import ToolSpec

tracer = trace.get_tracer(A.INSTRUMENTATION_NAME, __version__)


class StepInFlight:
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
        if self.spec.is_llm:
            self.run.model_step_done(self.ids.step_id)

    def finish(
        self, result: object, captured: CapturedResult | None = None, recorded: Mapping[str, Any] | None = None
    ) -> None:
        """End the step with its result; ``captured`` when the result's JSON is already known, and
        ``recorded``: the attributes of the recorded step that ``result`` is, served from the tape as
        recorded, whose facts about the answer (tokens, model, output messages …) are taken as they are
        rather than read again from the result (a replayed stream's hundreds of events)."""
        try:
            if captured is None:
                if recorded is None:  # a stream is scanned as its assembled text before any field is built from it
                    result = redact_stream(result, self.capture.redactor.redact_text)
                captured = capture_result(result, self.capture)
            attrs: dict[str, Any] = {}
            as_recorded = self.spec.is_llm and recorded is not None and A.GEN_AI_OUTPUT_MESSAGES in recorded
            if not self.spec.is_llm:
                attrs[A.GEN_AI_TOOL_CALL_RESULT] = captured.json
            elif as_recorded:
                assert recorded is not None
                attrs[A.MODEL_RESULT] = captured.json
                attrs.update({key: recorded[key] for key in ANSWER_FACTS if key in recorded})
            else:
                attrs[A.MODEL_RESULT] = captured.json
                inp, out = usage_tokens(result)
                if inp is not None:
                    attrs[A.GEN_AI_USAGE_INPUT_TOKENS] = inp
                if out is not None:
                    attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] = out
                # The captured JSON is the redacted result already: parse it rather than redact again.
                redacted = capture_value(result, self.capture) if captured.truncated else orjson.loads(captured.json)
                attrs.update(output_message_attributes(self.spec.name, redacted))
                response_model = _response_model(result)
                if response_model is not None:
                    attrs[A.GEN_AI_RESPONSE_MODEL] = response_model
            if not as_recorded:
                attrs.update(self.spec.result_facts(result))
            if captured.type_json is not None:
                attrs[A.RESULT_TYPE] = captured.type_json
            if captured.lossy:
                lossy = captured.lossy
                hint = self.spec.result_hint()
                if hint is not None and hint is not Any and hint is not object:  # it names what replay cannot look up
                    lossy = tuple(t for t in lossy if not t.endswith(UNNAMED))
                if lossy:
                    warn_lossy(self.spec, lossy)
            if captured.stand_ins:
                attrs[A.RESULT_STAND_INS] = orjson.dumps(captured.stand_ins).decode("utf-8")
            if captured.truncated:
                attrs[A.RESULT_TRUNCATED] = True
                attrs[A.RESULT_SHA256] = captured.sha256 or ""
            if len(attrs) == 1:  # a tool's result alone (the usual step): the SDK cleans one value, not a mapping
                [(key, value)] = attrs.items()
                self.span.set_attribute(key, value)
            else:
                self.span.set_attributes(attrs)
        finally:
            self._close()

    def fail(self, exc: BaseException) -> None:
        try:
            record_error(self.span, exc, self.capture.redactor)
        finally:
            self._close()


ANSWER_FACTS: tuple[str, ...] = (
    A.GEN_AI_OUTPUT_MESSAGES,
    A.GEN_AI_RESPONSE_MODEL,
    A.GEN_AI_RESPONSE_ID,
    A.GEN_AI_RESPONSE_FINISH_REASONS,
    A.GEN_AI_USAGE_INPUT_TOKENS,
    A.GEN_AI_USAGE_OUTPUT_TOKENS,
    A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    A.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
)
"""What a model step's answer says, as ``finish`` puts it on the step's span (from the result, or from the
recorded step's attributes when the result is that step's, served as recorded)."""


def input_message_attributes(name: str, args: Any) -> dict[str, str]:
    """``gen_ai.input.messages`` (and ``gen_ai.system_instructions``) of a model step's redacted arguments,
    in the conventions' shape; read by the step's route (``name``) or by the arguments' shape."""
    try:
        prompt = prompt_of(name, args)
    except Exception:  # a shape we misread never costs the step
        return {}
    if prompt is None:
        return {}
    attrs = {A.GEN_AI_INPUT_MESSAGES: dumps(list(prompt.messages))}
    if prompt.system:
        attrs[A.GEN_AI_SYSTEM_INSTRUCTIONS] = dumps(list(prompt.system))
    return attrs


def output_message_attributes(name: str, result: Any) -> dict[str, str]:
    """``gen_ai.output.messages`` of a model step's redacted result (an HTTP answer, a stream, an SDK object)."""
    try:
        messages = answer_of(name, result)
    except Exception:
        return {}
    return {A.GEN_AI_OUTPUT_MESSAGES: dumps(messages)} if messages else {}


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_lossy(spec: ToolSpec, types: Sequence[str]) -> None:
    """Warn once per tool and type that a result cannot come back from the tape as itself."""
    with _warned_lock:
        fresh = [t for t in dict.fromkeys(types) if (spec.name, t) not in _warned]
        _warned.update((spec.name, t) for t in fresh)
    if not fresh:
        return
    what = "model function" if spec.is_llm else "tool"
    warnings.warn(
        f"{what} {spec.name!r} returned {', '.join(fresh)}, which a replay cannot give back as itself (the tape "
        "keeps its data as JSON, not its type): return a dataclass, a pydantic model or JSON data, or annotate "
        f"the return type / pass result_type= to @{'model_call' if spec.is_llm else 'tool'} with a type replay "
        "can rebuild",
        TapeWarning,
        stacklevel=5,
    )


def record_error(span: Span, exc: BaseException, redactor: Redactor) -> None:
    """Status ERROR and an ``exception`` event, with the message redacted; the args and JSON-able
    attributes of the exception beside it (redacted), so a replay can raise it again as itself."""
    message = redactor.redact_text(str(exc))
    try:
        args, attrs = exception_facts(exc)
        facts: dict[str, Any] = {A.ERROR_ARGS: orjson.dumps(redactor(args)).decode("utf-8")}
        if attrs:
            facts[A.ERROR_ATTRIBUTES] = orjson.dumps(redactor(attrs)).decode("utf-8")
        span.set_attributes(facts)
    except Exception:  # an exception that cannot be described is still recorded by type and message
        pass
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
    target: str | None = None
    """For a method step: the run-local name of the object it was called on (``Client#1``)."""


def prepare(spec: ToolSpec, run: RunState, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Prepared:
    """Bind and capture a call's arguments and take its seq and step ids.

    Raises ``TypeError`` exactly as the call itself would when the arguments do not fit.
    """
    bound = spec.binder(args, kwargs)
    captured = capture_args(spec.name, bound, run.capture, spec.key_ignore)
    in_context = current_run.get() is run
    enclosing = current_step.get() if in_context else None
    target = None
    if spec.receiver is not None:
        receiver = args[0] if args else kwargs.get(spec.receiver)
        if receiver is not None:
            target = run.target_of(receiver)
    return Prepared(run, run.next_step(spec.name, enclosing, model=spec.is_llm), captured, in_context, target)


def step_attributes(spec: ToolSpec, prep: Prepared) -> tuple[str, dict[str, Any]]:
    """The span name and start attributes of a step."""
    run, ids, captured = prep.run, prep.ids, prep.captured
    if not spec.is_llm:
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.GEN_AI_TOOL_NAME: spec.name,
            A.GEN_AI_TOOL_CALL_ID: f"{run.run_id}:{ids.seq}",
            A.GEN_AI_TOOL_TYPE: A.TOOL_TYPE_FUNCTION,
            A.GEN_AI_TOOL_CALL_ARGUMENTS: captured.json,
        }
        span_name = A.tool_span_name(spec.name)
    else:
        model = spec.model or _model_from_args(captured.value, spec.model_argument) or spec.name
        operation = spec.operation or A.OP_CHAT
        attrs = {A.GEN_AI_OPERATION_NAME: operation, A.GEN_AI_REQUEST_MODEL: model, A.FUNCTION: spec.name}
        if spec.provider:
            attrs[A.GEN_AI_PROVIDER_NAME] = spec.provider
        attrs[A.MODEL_ARGUMENTS] = captured.json
        attrs.update(input_message_attributes(spec.name, captured.value))
        span_name = f"{operation} {model}"
    if spec.call_attributes is not None:
        attrs.update(spec.call_attributes(captured.value))
    attrs[A.RUN_ID] = run.run_id
    attrs[A.STEP_ID] = ids.step_id
    attrs[A.PARENT_STEP_ID] = ids.parent_step_id
    attrs[A.SEQ] = ids.seq
    attrs[A.KIND] = spec.kind_value
    attrs[A.SIDE_EFFECT] = spec.side_effect_value
    attrs[A.CALL_KEY] = captured.call_key
    if captured.stand_ins:
        attrs[A.STAND_INS] = orjson.dumps(captured.stand_ins).decode("utf-8")
    if prep.target is not None:
        attrs[A.TARGET] = prep.target
    if captured.key_ignore:
        attrs[A.KEY_IGNORE] = orjson.dumps(captured.key_ignore).decode("utf-8")
    if spec.version is not None:
        attrs[A.TOOL_VERSION] = spec.version
    if spec.ttl is not None:
        expires = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=spec.ttl)
        attrs[A.EXPIRES_AT] = expires.isoformat(timespec="seconds")
    return span_name, attrs


def start_step(spec: ToolSpec, prep: Prepared, links: Sequence[Link] = ()) -> StepInFlight:
    """Start the step's span as the current span; ``finish`` or ``fail`` ends it."""
    run = prep.run
    span_name, attrs = step_attributes(spec, prep)
    undo: list[Callable[[], None]] = []
    if current_recording.get() is not run.recording:
        rec_token = current_recording.set(run.recording)
        undo.append(lambda: current_recording.reset(rec_token))
    parent_ctx = None if prep.in_context else trace.set_span_in_context(run.span)
    span = tracer.start_span(span_name, context=parent_ctx, kind=SpanKind.INTERNAL, attributes=attrs, links=links)
    ctx_token = otel_context.attach(trace.set_span_in_context(span, parent_ctx))
    undo.append(lambda: otel_context.detach(ctx_token))
    step_token = current_step.set(prep.ids.step_id)
    undo.append(lambda: current_step.reset(step_token))
    if not prep.in_context:
        run_token = current_run.set(run)
        undo.append(lambda: current_run.reset(run_token))
    return StepInFlight(spec, run, prep.ids, span, undo)


def begin_step(spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepInFlight | None:
    """Start a recorded step, or return None when there is no run to record it in."""
    run = step_run()
    if run is None:
        return None
    try:
        prep = prepare(spec, run, args, kwargs)
    except TypeError:
        return None  # the call itself will raise the same TypeError
    return start_step(spec, prep)


def _response_model(result: object) -> str | None:
    """The model that answered: a result's ``model`` (a mapping's key or an attribute), when it is text."""
    try:
        model = result.get("model") if isinstance(result, dict) else getattr(result, "model", None)
    except Exception:  # a property of the user's object: never fail the step for provenance
        return None
    return model if isinstance(model, str) and model else None


def _model_from_args(value: object, argument: str) -> str | None:
    if isinstance(value, dict):
        model = value.get(argument)
        if isinstance(model, str) and model:
            return model
    return None


def call_recorded(spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run the real function, as a recorded step when a run is active."""
    __tracebackhide__ = True  # pytest shows the user's frames, not ours
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


async def call_recorded_async(
    spec: ToolSpec, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``call_recorded`` for coroutine functions."""
    __tracebackhide__ = True  # pytest shows the user's frames, not ours
    step = begin_step(spec, args, kwargs)
    if step is None:
        return await fn(*args, **kwargs)
    try:
        result = await fn(*args, **kwargs)
    except BaseException as exc:
        step.fail(exc)
        raise
    step.finish(result)
    return result
