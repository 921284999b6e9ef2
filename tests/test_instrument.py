"""@tool, @model_call and agent_run: spans, identity, errors, concurrency."""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import inspect
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry import trace
from rawtape import RawSpan, raw_spans

from otel_agent_replay import ConfigurationError, agent_run, model_call, record, tool
from otel_agent_replay import attributes as A


@tool(side_effect="read_only", version="2")
def fetch_doc(doc_id: str, timeout: float = 5.0) -> dict[str, Any]:
    """Fetch a document."""
    return {"id": doc_id, "text": f"body of {doc_id}"}


@tool
def plain_tool(x: int) -> int:
    return x * 2


@tool(side_effect="write")
def explode(reason: str) -> None:
    raise KeyError(reason)


@model_call(provider="openai", model="gpt-test")
def summarise(messages: list[dict[str, str]], max_words: int = 120) -> dict[str, Any]:
    return {
        "choices": [{"role": "assistant", "content": "short"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3},
    }


def _steps(path: Path) -> list[RawSpan]:
    return [s for s in raw_spans(path) if A.SEQ in s.attrs]


def _run_span(path: Path) -> RawSpan:
    (run,) = [s for s in raw_spans(path) if s.attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT]
    return run


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
    root = _run_span(tape)
    assert root.name == "invoke_agent docs"
    assert root.attrs[A.RUN_ID] == run.run_id and len(run.run_id) == 32
    assert root.attrs[A.AGENT_VERSION] == "1.4" and root.attrs[A.TASK] == "summarise"
    assert root.attrs[A.INPUT] == '{"doc":"d1"}' and len(root.attrs[A.INPUT_HASH]) == 64
    assert root.attrs[A.OUTPUT] == '"done"' and root.attrs[A.MODE] == "record"
    assert root.attrs[A.SCHEMA_VERSION_ATTR] == A.SCHEMA_VERSION
    assert root.span["traceId"] == run.trace_id
    tool_step, model_step = _steps(tape)
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
    assert orjson.loads(model_step.attrs[A.GEN_AI_INPUT_MESSAGES]) == [{"role": "user", "content": "body of d1"}]
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

    with record(tape), agent_run("a"):
        ask("claude-test", "hello")
    (step,) = _steps(tape)
    assert step.name == "chat claude-test"
    assert step.attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 7 and step.attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 2


def test_positional_and_keyword_calls_get_one_call_key(tape: Path) -> None:
    with record(tape), agent_run("a"):
        fetch_doc("d1")
        fetch_doc("d1", 5.0)
        fetch_doc(doc_id="d1", timeout=5.0)
    keys = {s.attrs[A.CALL_KEY] for s in _steps(tape)}
    assert len(keys) == 1


def test_tool_error_is_recorded_and_reraised_unchanged(tape: Path) -> None:
    with record(tape), agent_run("a"):
        with pytest.raises(KeyError) as caught:
            explode("no such order")
        assert caught.value.args == ("no such order",)
    (step,) = _steps(tape)
    assert step.span["status"]["code"] == 2
    (event,) = step.span["events"]
    assert event["name"] == "exception"
    event_attrs = {a["key"]: a["value"]["stringValue"] for a in event["attributes"]}
    assert event_attrs[A.EXCEPTION_TYPE] == "builtins.KeyError"
    assert "no such order" in event_attrs[A.EXCEPTION_MESSAGE]
    assert A.GEN_AI_TOOL_CALL_RESULT not in step.attrs


def test_run_that_raises_is_an_error_span_and_the_error_propagates(tape: Path) -> None:
    with record(tape), pytest.raises(RuntimeError, match="agent gave up"), agent_run("a"):
        plain_tool(1)
        raise RuntimeError("agent gave up")
    assert _run_span(tape).span["status"]["code"] == 2
    assert len(_steps(tape)) == 1


def test_step_ids_and_parent_step_ids(tape: Path) -> None:
    @tool(side_effect="read_only")
    def outer(n: int) -> int:
        return plain_tool(n) + plain_tool(n + 1)

    with record(tape), agent_run("a"):
        plain_tool(1)  # first step: no parent
        summarise([{"role": "user", "content": "x"}])
        outer(1)  # asked for by the model step
        plain_tool(2)
    steps = {s.attrs[A.SEQ]: s.attrs for s in _steps(tape)}
    assert steps[1][A.STEP_ID] == "plain_tool#1" and steps[1][A.PARENT_STEP_ID] == ""
    assert steps[2][A.STEP_ID] == "summarise#1" and steps[2][A.PARENT_STEP_ID] == ""
    assert steps[3][A.STEP_ID] == "outer#1" and steps[3][A.PARENT_STEP_ID] == "summarise#1"
    assert steps[4][A.STEP_ID] == "outer#1/plain_tool#1" and steps[4][A.PARENT_STEP_ID] == "outer#1"
    assert steps[5][A.STEP_ID] == "outer#1/plain_tool#2"
    assert steps[6][A.STEP_ID] == "plain_tool#2" and steps[6][A.PARENT_STEP_ID] == "summarise#1"


def test_ignored_and_context_parameters_stay_out_of_key_and_tape(tape: Path) -> None:
    class RunContext:
        secret_state = "framework internals"

    @tool(ignore=("request_id",))
    def lookup(ctx: RunContext, sku: str, request_id: str) -> str:
        return sku

    with record(tape), agent_run("a"):
        lookup(RunContext(), "sku-1", "req-1")
        lookup(RunContext(), "sku-1", "req-2")
    steps = _steps(tape)
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
    (step,) = _steps(tape)
    assert step.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"sku":"a"}'


def test_ttl_sets_expires_at(tape: Path) -> None:
    @tool(side_effect="read_only", ttl=dt.timedelta(hours=1))
    def stock(sku: str) -> int:
        return 4

    before = dt.datetime.now(dt.timezone.utc)
    with record(tape), agent_run("a"):
        stock("a")
    (step,) = _steps(tape)
    expires = dt.datetime.fromisoformat(step.attrs[A.EXPIRES_AT])
    assert dt.timedelta(minutes=59) < expires - before < dt.timedelta(minutes=61)


def test_bad_declarations_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="side_effect='delete'"):
        tool(side_effect="delete")(lambda: None)
    with pytest.raises(ConfigurationError, match="not parameters"):

        @tool(ignore=("missing",))
        def f(a: int) -> None: ...

    with pytest.raises(ConfigurationError, match="ttl must be positive"):
        tool(ttl=0)(lambda: None)
    with pytest.raises(ConfigurationError, match="agent name"):
        agent_run("")


def test_calls_outside_a_run_run_plainly_and_record_nothing(tape: Path) -> None:
    with record(tape):
        assert plain_tool(4) == 8
    assert not tape.exists() or raw_spans(tape) == []


def test_run_nested_in_an_existing_span_is_its_child(tape: Path) -> None:
    with record(tape):
        tracer = trace.get_tracer("app")
        with tracer.start_as_current_span("POST /orders") as http, agent_run("a") as run:
            plain_tool(1)
    root = _run_span(tape)
    assert root.parent_span_id == f"{http.get_span_context().span_id:016x}"
    assert run.trace_id == f"{http.get_span_context().trace_id:032x}"


def test_user_spans_inside_a_tool_land_in_the_tape(tape: Path) -> None:
    @tool(side_effect="read_only")
    def http_get(url: str) -> int:
        with trace.get_tracer("http").start_as_current_span("GET"):
            return 200

    with record(tape), agent_run("a"):
        http_get("https://example.invalid/")
    names = [s.name for s in raw_spans(tape)]
    assert names == ["GET", "execute_tool http_get", "invoke_agent a"]


def test_agent_run_as_decorator_records_input_and_output(tape: Path) -> None:
    @agent_run("support", agent_version="3")
    def answer(question: str, tone: str = "calm") -> str:
        plain_tool(1)
        return f"answer to {question}"

    @agent_run("support-async")
    async def answer_async(question: str) -> str:
        plain_tool(2)
        return "async answer"

    with record(tape):
        assert answer("why?") == "answer to why?"
        assert asyncio.run(answer_async("how?")) == "async answer"
    runs = [s for s in raw_spans(tape) if s.attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT]
    assert [r.attrs[A.INPUT] for r in runs] == ['{"question":"why?","tone":"calm"}', '{"question":"how?"}']
    assert [r.attrs[A.OUTPUT] for r in runs] == ['"answer to why?"', '"async answer"']
    assert runs[0].attrs[A.RUN_ID] != runs[1].attrs[A.RUN_ID]


def test_async_run_and_given_run_id(tape: Path) -> None:
    async def main() -> str:
        async with agent_run("a", run_id="run-42", conversation_id="conv-1") as run:
            await asyncio.sleep(0)
            return run.run_id

    with record(tape):
        assert asyncio.run(main()) == "run-42"
    root = _run_span(tape)
    assert root.attrs[A.RUN_ID] == "run-42" and root.attrs[A.GEN_AI_CONVERSATION_ID] == "conv-1"


def _assert_distinct_gap_free(path: Path, expected: int) -> None:
    seqs = sorted(s.attrs[A.SEQ] for s in _steps(path))
    assert seqs == list(range(1, expected + 1))


def test_eight_threads_get_distinct_gap_free_seq(tape: Path) -> None:
    barrier = threading.Barrier(8)

    @tool(side_effect="read_only")
    def work(worker: int, i: int) -> int:
        return worker * 100 + i

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(25):
            work(n, i)

    with record(tape), agent_run("threads"):
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(worker, n)) for n in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    _assert_distinct_gap_free(tape, 200)
    ids = {s.attrs[A.STEP_ID] for s in _steps(tape)}
    assert len(ids) == 200


def test_asyncio_gather_of_fifty_calls_gets_distinct_seq(tape: Path) -> None:
    @tool(side_effect="read_only")
    async def lookup(n: int) -> int:
        await asyncio.sleep(0.001 * (50 - n) / 50)  # finish in reverse order
        return n

    async def main() -> list[int]:
        async with agent_run("gather"):
            return list(await asyncio.gather(*(lookup(n) for n in range(50))))

    with record(tape):
        assert asyncio.run(main()) == list(range(50))
    _assert_distinct_gap_free(tape, 50)
    by_seq = {s.attrs[A.SEQ]: s.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] for s in _steps(tape)}
    assert by_seq[1] == '{"n":0}' and by_seq[50] == '{"n":49}'  # seq taken when each call starts


def test_thread_pool_without_context_joins_the_only_active_run(tape: Path) -> None:
    with record(tape), agent_run("pool") as run, ThreadPoolExecutor(4) as pool:
        assert list(pool.map(plain_tool, range(10))) == [n * 2 for n in range(10)]
    steps = _steps(tape)
    _assert_distinct_gap_free(tape, 10)
    root = _run_span(tape)
    assert all(s.attrs[A.RUN_ID] == run.run_id and s.parent_span_id == root.span_id for s in steps)
