"""@tool and @model_call: the function keeps its face; each call is a step span with the schema."""

from __future__ import annotations

import datetime as dt
import inspect
import types
import warnings
from pathlib import Path

import orjson
import pytest
from helpers.rawtape import raw_spans, run_span_of, steps_of
from helpers.sample_tools import fetch_doc, plain_tool, summarise

from otel_agent_replay import TapeWarning, agent_run, load_tape, model_call, record, replay, tool
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import _steps


def test_decorator_keeps_the_function_face() -> None:
    assert fetch_doc.__name__ == "fetch_doc" and fetch_doc.__doc__ == "Fetch a document."
    assert inspect.signature(fetch_doc) == inspect.signature(fetch_doc.__wrapped__)  # type: ignore[attr-defined]
    assert list(inspect.signature(fetch_doc).parameters) == ["doc_id", "timeout"]
    assert fetch_doc.__annotations__["doc_id"] == "str"

    @tool
    async def later(n: int) -> int:
        return n

    assert inspect.iscoroutinefunction(later)


def test_a_run_is_a_parent_span_and_each_call_a_child_step(tape: Path) -> None:
    with record(tape), agent_run("docs", agent_version="1.4", task="summarise", input={"doc": "d1"}) as run:
        doc = fetch_doc("d1")
        summarise([{"role": "user", "content": doc["text"]}])
        run.set_output("done")
    assert doc == {"id": "d1", "text": "body of d1"}
    root = run_span_of(tape)
    assert root.name == "invoke_agent docs"
    assert root.attrs[A.RUN_ID] == run.run_id and len(run.run_id) == 32
    assert root.attrs[A.AGENT_VERSION] == "1.4" and root.attrs[A.TASK] == "summarise"
    assert root.attrs[A.INPUT] == '{"doc":"d1"}' and len(root.attrs[A.INPUT_HASH]) == 64
    assert root.attrs[A.OUTPUT] == '"done"' and root.attrs[A.MODE] == "record"
    assert root.attrs[A.SCHEMA_VERSION_ATTR] == A.SCHEMA_VERSION
    assert root.span["traceId"] == run.trace_id
    tool_step, model_step = steps_of(tape)
    assert tool_step.name == "execute_tool fetch_doc"
    assert tool_step.parent_span_id == root.span_id
    assert tool_step.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"doc_id":"d1","timeout":5.0}'
    assert tool_step.attrs[A.GEN_AI_TOOL_CALL_RESULT] == '{"id":"d1","text":"body of d1"}'
    assert tool_step.attrs[A.SIDE_EFFECT] == "read_only" and tool_step.attrs[A.TOOL_VERSION] == "2"
    assert tool_step.attrs[A.KIND] == "tool" and tool_step.attrs[A.SEQ] == 1
    assert tool_step.attrs[A.CALL_KEY].startswith("fetch_doc:")
    assert tool_step.attrs[A.GEN_AI_TOOL_TYPE] == "function"
    assert A.RESULT_TRUNCATED not in tool_step.attrs and A.RESULT_SHA256 not in tool_step.attrs  # not shortened
    assert model_step.name == "chat gpt-test"
    assert model_step.attrs[A.KIND] == "llm" and model_step.attrs[A.FUNCTION] == "summarise"
    assert model_step.attrs[A.GEN_AI_PROVIDER_NAME] == "openai"
    assert model_step.attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert model_step.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 3
    assert '"max_words":120' in model_step.attrs[A.MODEL_ARGUMENTS]
    assert orjson.loads(model_step.attrs[A.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "body of d1"}]}
    ]
    assert "short" in model_step.attrs[A.GEN_AI_OUTPUT_MESSAGES]


def test_usage_read_from_attributes_with_input_output_names(tape: Path) -> None:
    class Usage:
        input_tokens = 7
        output_tokens = 2

    class Reply:
        usage = Usage()
        text = "hi"

    @model_call(provider="anthropic")
    def ask(model: str, prompt: str) -> Reply:
        return Reply()

    with record(tape), agent_run("a"), pytest.warns(TapeWarning, match="'ask' returned .*Reply"):
        ask("claude-test", "hello")
    (step,) = steps_of(tape)
    assert step.name == "chat claude-test"
    assert step.attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 7 and step.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 2


def test_positional_and_keyword_calls_get_one_call_key(tape: Path) -> None:
    with record(tape), agent_run("a"):
        fetch_doc("d1")
        fetch_doc("d1", 5.0)
        fetch_doc(doc_id="d1", timeout=5.0)
    keys = {s.attrs[A.CALL_KEY] for s in steps_of(tape)}
    assert len(keys) == 1


def test_ignored_and_context_parameters_stay_out_of_key_and_tape(tape: Path) -> None:
    class RunContext:
        secret_state = "framework internals"

    @tool(ignore=("request_id",))
    def lookup(ctx: RunContext, sku: str, request_id: str) -> str:
        return sku

    with record(tape), agent_run("a"):
        lookup(RunContext(), "sku-1", "req-1")
        lookup(RunContext(), "sku-1", "req-2")
    steps = steps_of(tape)
    assert [s.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] for s in steps] == ['{"sku":"sku-1"}'] * 2
    assert steps[0].attrs[A.CALL_KEY] == steps[1].attrs[A.CALL_KEY]


def test_methods_leave_self_out(tape: Path) -> None:
    class Catalogue:
        def __init__(self) -> None:
            self.prices = {"a": 3}

        @tool(side_effect="read_only")
        def price(self, sku: str) -> int:
            return self.prices[sku]

    with record(tape), agent_run("a"):
        assert Catalogue().price("a") == 3
    (step,) = steps_of(tape)
    assert step.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"sku":"a"}'


def test_ttl_sets_expires_at(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step expires ``ttl`` after it was recorded: read on a clock fixed for the test, not the wall clock."""
    recorded_at = dt.datetime(2026, 3, 4, 5, 6, 7, 890_000, tzinfo=dt.timezone.utc)

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> Frozen:
            return cls.fromtimestamp(recorded_at.timestamp(), tz)

    clock = types.SimpleNamespace(datetime=Frozen, timezone=dt.timezone, timedelta=dt.timedelta)
    monkeypatch.setattr(_steps, "_dt", clock)

    @tool(side_effect="read_only", ttl=dt.timedelta(hours=1))
    def stock(sku: str) -> int:
        return 4

    with record(tape), agent_run("a"):
        stock("a")
    (step,) = steps_of(tape)
    assert step.attrs[A.EXPIRES_AT] == "2026-03-04T06:06:07+00:00"  # an hour on, to the second


def test_calls_outside_a_run_belong_to_the_blocks_implicit_run(tape: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: nothing is dropped
        with record(tape):
            assert plain_tool(4) == 8
            assert plain_tool(5) == 10
    spans = raw_spans(tape)
    run = next(s for s in spans if s.name.startswith("invoke_agent "))
    steps = [s for s in spans if s.name == "execute_tool plain_tool"]
    assert run.attrs[A.GEN_AI_AGENT_NAME] == "test_calls_outside_a_run_belong_to_the_blocks_implicit_run"
    assert [s.attrs[A.SEQ] for s in steps] == [1, 2]
    assert {s.attrs[A.RUN_ID] for s in steps} == {run.attrs[A.RUN_ID]}
    assert {s.parent_span_id for s in steps} == {run.span_id}
    with record(tape, agent="named"):
        plain_tool(6)
    assert [s.attrs[A.GEN_AI_AGENT_NAME] for s in raw_spans(tape) if s.name.startswith("invoke_agent ")][-1] == "named"
    with replay(tape, run_id=run.attrs[A.RUN_ID], stub=["plain_tool"]) as session:
        assert plain_tool(4) == 8 and plain_tool(5) == 10  # the replay binds its implicit run the same way
    assert session.stats.hits == 2


def test_a_replay_binds_calls_outside_runs_to_the_implicit_run_whatever_the_order(tape: Path) -> None:
    with record(tape, agent="block"):
        with agent_run("agent"):
            plain_tool(1)
        plain_tool(2)  # after the run: the block's implicit run, later on the tape
    runs = load_tape(tape).runs
    assert [(r.agent_name, r.attributes.get(A.IMPLICIT_RUN)) for r in runs] == [("agent", None), ("block", True)]
    with replay(tape, stub=["plain_tool"]) as session:
        assert plain_tool(2) == 4  # before the run this time: still the implicit run's call
        with agent_run("agent"):
            assert plain_tool(1) == 2
    assert session.stats.hits == 2 and session.stats.drifts == 0
