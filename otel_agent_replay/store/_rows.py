"""A loaded run → the rows the store keeps of it: session, spans, messages, tool calls.

Natural keys make ingest idempotent: a session is its ``run_id``; a span is (trace id, span id);
a tool call is ``{run_id}:{seq}`` (what ``gen_ai.tool.call.id`` holds on our spans); a message
is ``{span id}:{in|out}:{index}`` of the model step it came from. Each span is also kept as one
OTLP JSON line, re-encoded from what the loader read (ids, times, name, attributes, status and
the exception), with the run id, seq, step id and call key the loader worked out for a foreign
span written into it, so a stored session writes back as a self-contained tape.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from opentelemetry.exporter.agent_replay_tape import encode_attributes

from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.core.attributes import (
    CALL_KEY,
    DIVERGENCES,
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    INPUT_HASH,
    INSTRUMENTATION_NAME,
    JUDGE_ERRORS,
    REPETITION,
    RUN_ID,
    SEQ,
    STEP_ID,
    run_span_name,
)
from otel_agent_replay.tape import Run, Step, StepError, lineage

from ._messages import transcript

__all__ = ["OUT_OF_BOUNDS", "SessionRows", "rows_of_run", "span_line"]

OUT_OF_BOUNDS: Final = "unexpected_tool_call"
"""The ``error`` of a tool call that an out-of-bounds replay answered instead of the tool."""

_NS_PER_MS: Final = 1_000_000
_STATUS_ERROR: Final = 2
_SPAN_KIND_INTERNAL: Final = 1


@dataclass(slots=True)
class SessionRows:
    """The rows of one run, as parameter tuples in the column order of the upserts in ``_ingest``."""

    session: tuple[Any, ...]
    complete: bool
    spans: list[tuple[Any, ...]] = field(default_factory=list)
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    tool_calls: list[tuple[Any, ...]] = field(default_factory=list)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def _ms(ns: int) -> int:
    return ns // _NS_PER_MS


def span_line(
    trace_id: str,
    span_id: str,
    parent_span_id: str,
    name: str,
    start_ns: int,
    end_ns: int,
    attributes: dict[str, Any],
    error: StepError | None,
) -> str:
    """One span as an OTLP JSON ``TracesData`` line (the tape format), without the newline."""
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": _SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(end_ns),
        "attributes": encode_attributes(attributes),
    }
    if parent_span_id:
        span["parentSpanId"] = parent_span_id
    if error is not None:
        event_attrs = {EXCEPTION_MESSAGE: error.message}
        if error.type:
            event_attrs = {EXCEPTION_TYPE: error.type, **event_attrs}
        span["events"] = [
            {"timeUnixNano": str(end_ns), "name": EXCEPTION_EVENT, "attributes": encode_attributes(event_attrs)}
        ]
        short = error.type.rsplit(".", 1)[-1]
        span["status"] = {"code": _STATUS_ERROR, "message": f"{short}: {error.message}" if short else error.message}
    else:
        span["status"] = {}
    scope = {"scope": {"name": INSTRUMENTATION_NAME}, "spans": [span]}
    return _json({"resourceSpans": [{"resource": {}, "scopeSpans": [scope]}]})


def _step_attributes(step: Step) -> dict[str, Any]:
    attrs = dict(step.attributes)
    # What the loader worked out for a foreign span, written down so the line loads the same alone.
    attrs.setdefault(RUN_ID, step.run_id)
    if not isinstance(attrs.get(SEQ), int):
        attrs[SEQ] = step.seq
    attrs.setdefault(STEP_ID, step.step_id)
    attrs.setdefault(CALL_KEY, step.call_key)
    return attrs


def _session_row(run: Run, tags: list[str], source: str | None) -> tuple[Any, ...]:
    attrs = run.attributes
    input_hash = attrs.get(INPUT_HASH)
    if not isinstance(input_hash, str) and run.input_json is not None:
        input_hash = hashlib.sha256(run.input_json.encode("utf-8")).hexdigest()
    forked = lineage(run)
    extra: dict[str, Any] = {
        "span_id": run.span_id or None,
        "conversation_id": run.conversation_id,
        "mode": run.mode,
        "replay_of": run.replay_of,
        "recorded_at": run.recorded_at,
        "output": run.output if run.output_json is not None else None,
        "error": {"type": run.error.type, "message": run.error.message} if run.error else None,
        "tape": source,
        "divergences": _count(attrs.get(DIVERGENCES)),
        "judge_errors": _texts(attrs.get(JUDGE_ERRORS)),
        "forked_from": None if forked is None else forked.to_json(),
    }
    if run.complete:
        status = "failed" if run.error is not None else "success"
        started, finished = _ms(run.start_ns), _ms(run.end_ns)
        latency: float | None = (run.end_ns - run.start_ns) / _NS_PER_MS
    else:
        status = "aborted"  # its run span never reached the tape: the process died, or the tape was cut
        started, finished = _ms(min((s.start_ns for s in run.steps), default=0)), None
        latency = None
    return (
        run.run_id,
        run.trace_id,
        run.agent_name,
        run.agent_version,
        run.task,
        run.input_json,
        input_hash if isinstance(input_hash, str) else None,
        started,
        finished,
        status,
        _json(tags),
        _json({k: v for k, v in extra.items() if v is not None}),
        latency,
        run.replay_of,
        _repetition(attrs.get(REPETITION), run.replay_of),
    )


def _count(value: object) -> int | None:
    """A whole number of 0 or more from a span attribute, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _texts(value: object) -> list[str] | None:
    """A non-empty list of strings from a span attribute (one string is a list of one), else None."""
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else []
    texts = [str(v) for v in items if isinstance(v, str) and v]
    return texts or None


def _repetition(value: object, replay_of: str | None) -> int | None:
    """A replay's repetition number: the attribute when it is a positive whole number, else 1."""
    if replay_of is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return 1


def _tool_outcome(step: Step) -> tuple[str, str | None]:
    """(status, error) of a tool call: an exception, or a result that is an ``{"error": "..."}`` answer."""
    if step.error is not None:
        short = step.error.type.rsplit(".", 1)[-1]
        status = "timeout" if "timeout" in short.lower() else "error"
        return status, f"{short}: {step.error.message}" if short else step.error.message
    if step.result_json is not None and step.result_json.startswith("{") and '"error"' in step.result_json:
        result = step.result
        if isinstance(result, dict):
            error = result.get("error")
            if isinstance(error, str) and error:
                return "error", error
    return "ok", None


def rows_of_run(run: Run, tags: list[str], source: str | None = None) -> SessionRows:
    """Every row of one run (``source``: the tape it was read from, kept in the session's ``extra``)."""
    rows = SessionRows(_session_row(run, tags, source), run.complete)
    sid = run.run_id
    if run.complete:
        attrs = dict(run.attributes)
        attrs.setdefault(RUN_ID, sid)
        line = span_line(
            run.trace_id, run.span_id, "", run_span_name(run.agent_name), run.start_ns, run.end_ns, attrs, run.error
        )
        rows.spans.append((run.trace_id, run.span_id, sid, "run", None, None, None, None, line))
    # The run span's own parent is not kept by the loader; a run span is written as a root.
    model_steps = [step for step in run.steps if step.kind == StepKind.LLM]
    last_answer: dict[str, str] = {}
    for seq, (step, side, index, message) in enumerate(
        transcript(model_steps, GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES), start=1
    ):
        msg_id = f"{step.span_id}:{side}:{index}"
        created = _ms(step.start_ns if side == "in" else step.end_ns)
        rows.messages.append(
            (msg_id, sid, seq, message.role, message.content, message.tool_calls_json, created, step.seq)
        )
        if side == "out":
            last_answer[step.step_id] = msg_id
    for step in run.steps:
        kind = StepKind.TOOL if step.kind == StepKind.TOOL else StepKind.LLM
        line = span_line(
            step.trace_id,
            step.span_id,
            step.parent_span_id,
            step.name,
            step.start_ns,
            step.end_ns,
            _step_attributes(step),
            step.error,
        )
        model = step.model if kind == StepKind.LLM else None
        rows.spans.append(
            (step.trace_id, step.span_id, sid, kind, step.seq, model, step.input_tokens, step.output_tokens, line)
        )
        if kind != StepKind.TOOL:
            continue
        status, error = _tool_outcome(step)
        rows.tool_calls.append(
            (
                f"{sid}:{step.seq}",
                sid,
                last_answer.get(step.parent_step_id),
                step.step_id,
                step.parent_step_id,
                step.seq,
                step.tool,
                step.tool_version,
                step.side_effect or SideEffect.UNDECLARED,
                step.call_key,
                step.args_json,
                step.result_json,
                (step.end_ns - step.start_ns) / _NS_PER_MS,
                status,
                error,
                _ms(step.start_ns),
            )
        )
    return rows
