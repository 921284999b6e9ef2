"""The ``Step`` and ``Run`` values of span records: which attribute fills which field.

A step span of ours carries every field; a foreign span lacks some, and ``tape`` works out its
run, seq and step id before it comes here (its call key: ``foreign_call_key``). Values that a
foreign writer stored in another type are converted: structured JSON becomes canonical JSON
text, numbers and flags become text, decimal strings become integers.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from otel_agent_replay.capture import canonical_json, dumps_canonical, key_from_json, normalize
from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.core.attributes import (
    AGENT_VERSION,
    EXPIRES_AT,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    INPUT,
    MODE,
    MODEL_RESULT,
    OP_INVOKE_AGENT,
    OUTPUT,
    PARENT_STEP_ID,
    RECORDED_AT,
    REPLAY_OF,
    RESULT_SHA256,
    RESULT_TRUNCATED,
    SIDE_EFFECT,
    TASK,
    TOOL_VERSION,
)

from ._span import SpanRecord, int_or_none
from ._values import Run, Step, new_step

# The kinds as the plain strings a tape holds (an enum member's attribute lookup is slower).
_LLM: Final = StepKind.LLM.value
_UNDECLARED: Final = SideEffect.UNDECLARED.value
_READ_ONLY: Final = SideEffect.READ_ONLY.value
_STEP_FIELDS: Final = (
    PARENT_STEP_ID,
    SIDE_EFFECT,
    RESULT_TRUNCATED,
    TOOL_VERSION,
    RESULT_SHA256,
    EXPIRES_AT,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
)

__all__ = ["complete_run", "foreign_call_key", "incomplete_run", "make_step", "name_suffix", "text_or_none"]


def make_step(
    kind: str,
    tool: str,
    args_json: str,
    seq: int,
    step_id: str,
    call_key: str,
    run_id: str,
    record: SpanRecord,
) -> Step:
    """The ``Step`` of a step span whose run, seq, step id and call key are known."""
    # text_or_none and int_or_none written out for the common case (a str, an int or None): this
    # runs for every step of a tape.
    parent_step_id, side_effect, truncated, tool_version, sha256, expires_at, model, provider, tokens_in, tokens_out = (
        map(record.attributes.get, _STEP_FIELDS)
    )
    result = record.attributes.get(MODEL_RESULT if kind == _LLM else GEN_AI_TOOL_CALL_RESULT)
    if result is not None and type(result) is not str:
        result = canonical_json(result)
    if type(parent_step_id) is not str:
        parent_step_id = "" if parent_step_id is None else str(parent_step_id)
    if side_effect == _UNDECLARED:
        side_effect = None
    elif side_effect is None:
        if kind == _LLM:
            side_effect = _READ_ONLY  # tapes written before every step carried it: a model step reads
    elif type(side_effect) is not str:
        side_effect = str(side_effect)
    if tool_version is not None and type(tool_version) is not str:
        tool_version = str(tool_version)
    if sha256 is not None and type(sha256) is not str:
        sha256 = str(sha256)
    if expires_at is not None and type(expires_at) is not str:
        expires_at = str(expires_at)
    if model is not None and type(model) is not str:
        model = str(model)
    if provider is not None and type(provider) is not str:
        provider = str(provider)
    if tokens_in is not None and type(tokens_in) is not int:
        tokens_in = int_or_none(tokens_in)
    if tokens_out is not None and type(tokens_out) is not int:
        tokens_out = int_or_none(tokens_out)
    return new_step(
        kind,
        tool,
        args_json,
        result,
        record.error,
        seq,
        step_id,
        parent_step_id,
        side_effect,
        tool_version,
        call_key,
        record.start_ns,
        record.end_ns,
        run_id,
        record.trace_id,
        record.span_id,
        record.parent_span_id,
        record.name,
        truncated is True or truncated == "true",
        sha256,
        expires_at,
        model,
        provider,
        tokens_in,
        tokens_out,
        record.attributes,
    )


def foreign_call_key(tool: str, args_json: str) -> str:
    """The call key of a step recorded without one: canonical JSON of its arguments."""
    try:
        canonical = dumps_canonical(normalize(orjson.loads(args_json)))
    except orjson.JSONDecodeError:
        canonical = canonical_json(args_json)
    return key_from_json(tool, canonical)


def complete_run(run_id: str, record: SpanRecord, steps: tuple[Step, ...]) -> Run:
    """The ``Run`` of a run span and its steps."""
    attrs = record.attributes
    agent_name = text_or_none(attrs.get(GEN_AI_AGENT_NAME))
    if agent_name is None:
        agent_name = name_suffix(record.name, OP_INVOKE_AGENT)
    return Run(
        run_id=run_id,
        trace_id=record.trace_id,
        span_id=record.span_id,
        agent_name=agent_name,
        agent_version=text_or_none(attrs.get(AGENT_VERSION)),
        task=text_or_none(attrs.get(TASK)),
        input_json=_json_text(attrs.get(INPUT)),
        output_json=_json_text(attrs.get(OUTPUT)),
        steps=steps,
        complete=True,
        conversation_id=text_or_none(attrs.get(GEN_AI_CONVERSATION_ID)),
        mode=text_or_none(attrs.get(MODE)),
        replay_of=text_or_none(attrs.get(REPLAY_OF)),
        recorded_at=text_or_none(attrs.get(RECORDED_AT)),
        error=record.error,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        attributes=attrs,
    )


def incomplete_run(run_id: str, steps: tuple[Step, ...]) -> Run:
    """A run whose run span never reached the tape: what its steps tell about it."""
    step_spans = {step.span_id for step in steps}
    outer = {step.parent_span_id for step in steps if step.parent_span_id not in step_spans}
    return Run(
        run_id=run_id,
        trace_id=steps[0].trace_id if steps else "",
        span_id=outer.pop() if len(outer) == 1 else "",
        agent_name="",
        agent_version=None,
        task=None,
        input_json=None,
        output_json=None,
        steps=steps,
        complete=False,
        start_ns=min((step.start_ns for step in steps), default=0),
        end_ns=max((step.end_ns for step in steps), default=0),
    )


def name_suffix(span_name: str, operation: str) -> str:
    """What follows the operation in a span name (``execute_tool search`` → ``search``), else the name."""
    prefix = operation + " "
    return span_name[len(prefix) :] if span_name.startswith(prefix) else span_name


def text_or_none(value: Any) -> str | None:
    """An attribute as text (a foreign writer's number or flag becomes its ``str``); None stays None."""
    if value is None or type(value) is str:
        return value
    return str(value)


def _json_text(value: Any) -> str | None:
    """An attribute that holds JSON text; a structured value (foreign writers) becomes canonical JSON."""
    if value is None or type(value) is str:
        return value
    return canonical_json(value)
