"""Span records → Step and Run values: which attribute fills which field, and foreign writers' types."""

from __future__ import annotations

from typing import Any

from otel_agent_replay.capture._canonical import call_key
from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape._build import (
    complete_run,
    foreign_call_key,
    incomplete_run,
    make_step,
    name_suffix,
    text_or_none,
)
from otel_agent_replay.tape._span import SpanRecord

TRACE = "0af7651916cd43dd8448eb211c80319c"


def record(span_id: str, parent: str, attributes: dict[str, Any], name: str = "execute_tool search") -> SpanRecord:
    start = int(span_id, 16) * 1000
    return SpanRecord(TRACE, span_id, parent, name, start, start + 500, attributes, None, 1)


def test_a_step_takes_its_fields_from_the_span() -> None:
    attrs = {
        A.GEN_AI_TOOL_CALL_RESULT: {"n": 1},  # a foreign writer's structured value
        A.PARENT_STEP_ID: None,
        A.SIDE_EFFECT: SideEffect.UNDECLARED,
        A.TOOL_VERSION: 3,
        A.RESULT_TRUNCATED: "true",
        A.GEN_AI_USAGE_INPUT_TOKENS: "12",
    }
    step = make_step(StepKind.TOOL, "search", '{"q":1}', 1, "search#1", "k", "run-1", record("1" * 16, "", attrs))
    assert step.result_json == '{"n":1}'
    assert step.parent_step_id == ""
    assert step.side_effect is None
    assert step.tool_version == "3"
    assert step.result_truncated is True
    assert step.input_tokens == 12
    assert step.output_tokens is None
    assert step.attributes is not None and step.attributes[A.TOOL_VERSION] == 3


def test_a_model_step_reads_the_model_result() -> None:
    attrs = {A.MODEL_RESULT: '"ok"', A.GEN_AI_TOOL_CALL_RESULT: '"not this"'}
    step = make_step(StepKind.LLM, "plan", "{}", 1, "plan#1", "k", "run-1", record("1" * 16, "", attrs, "chat gpt-4o"))
    assert step.result_json == '"ok"'


def test_a_run_takes_its_agent_from_the_attribute_or_the_span_name() -> None:
    named = record("a" * 16, "", {A.GEN_AI_AGENT_NAME: "support", A.INPUT: {"order": 17}}, "invoke_agent x")
    run = complete_run("run-1", named, ())
    assert (run.agent_name, run.input_json, run.output_json, run.complete) == ("support", '{"order":17}', None, True)
    assert complete_run("run-1", record("a" * 16, "", {}, "invoke_agent travel"), ()).agent_name == "travel"


def test_an_incomplete_run_is_inferred_from_its_steps() -> None:
    steps = tuple(
        make_step(StepKind.TOOL, "t", "{}", seq, f"t#{seq}", "k", "run-4", record(span_id, parent, {}))
        for seq, span_id, parent in ((1, "2" * 16, "9" * 16), (2, "3" * 16, "2" * 16), (3, "4" * 16, "9" * 16))
    )
    run = incomplete_run("run-4", steps)
    assert (run.trace_id, run.span_id, run.complete) == (TRACE, "9" * 16, False)
    assert (run.start_ns, run.end_ns) == (steps[0].start_ns, steps[2].end_ns)
    assert incomplete_run("run-5", ()).span_id == ""


def test_foreign_call_keys_are_those_of_the_canonical_arguments() -> None:
    assert foreign_call_key("f", '{"b": 1.0000001, "a": " x "}') == call_key("f", {"a": "x", "b": 1.0})
    assert foreign_call_key("f", "plain text") == call_key("f", "plain text")


def test_small_helpers() -> None:
    assert name_suffix("execute_tool search", A.OP_EXECUTE_TOOL) == "search"
    assert name_suffix("search", A.OP_EXECUTE_TOOL) == "search"
    assert [text_or_none(v) for v in (None, "a", 1, True)] == [None, "a", "1", "True"]


def test_a_model_step_without_a_side_effect_reads_as_read_only() -> None:
    # tapes written before every step carried agent_replay.side_effect
    old = make_step(StepKind.LLM, "plan", "{}", 1, "plan#1", "k", "run-1", record("2" * 16, "", {}))
    assert old.side_effect == SideEffect.READ_ONLY
    tool = make_step(StepKind.TOOL, "search", "{}", 2, "search#1", "k", "run-1", record("3" * 16, "", {}))
    assert tool.side_effect is None
