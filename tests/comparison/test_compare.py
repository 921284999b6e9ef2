"""compare(): each divergence kind, ignored fields, policies, recorded vs replayed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay import Policy, agent_run, compare, load_tape, model_call, record, replay, tool
from otel_agent_replay.comparison import STRICT


@tool(side_effect="read_only")
def lookup(sku: str, fields: list[str] | None = None) -> dict[str, Any]:
    return {"sku": sku, "stock": STOCK[sku], "fetched_at": NOW[0], "request_id": f"req-{NOW[0]}"}


@tool(side_effect="read_only")
def tags(sku: str) -> list[dict[str, str]]:
    return [{"id": t, "label": t.upper()} for t in TAGS]


@tool(side_effect="write")
def reserve(sku: str, qty: int) -> str:
    if qty > 5:
        raise ValueError("too many")
    return "ok"


@tool(side_effect="external")
def notify(sku: str) -> str:
    return "sent"


@model_call(provider="p", model="m")
def plan(goal: str) -> dict[str, Any]:
    return {"steps": 2, "usage": {"input_tokens": NOW[0], "output_tokens": 3}}


STOCK = {"a": 3, "b": 0}
NOW = [1]
TAGS = ["red", "blue"]


def _agent(task: str = "restock", sku: str = "a", qty: int = 2, notify_too: bool = False, first: str = "lookup") -> str:
    with agent_run("shop", task=task, input={"sku": sku}) as run:
        plan(f"restock {sku}")
        if first == "tags":
            tags(sku)
            lookup(sku)
        else:
            lookup(sku)
            tags(sku)
        with contextlib.suppress(ValueError):
            reserve(sku, qty)
        if notify_too:
            notify(sku)
        run.set_output({"done": True, "sku": sku})
    return run.run_id


def _tape(path: Path, **changes: Any) -> Path:
    with record(path):
        _agent(**changes)
    return path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    NOW[0] = 1
    STOCK["a"] = 3
    TAGS[:] = ["red", "blue"]
    return _tape(tmp_path / "a.jsonl")


def test_runs_that_differ_only_in_ignored_fields_do_not_diverge(base: Path, tmp_path: Path) -> None:
    NOW[0] = 99  # timestamps, request ids and token counts change
    other = _tape(tmp_path / "b.jsonl")
    result = compare(base, other)
    assert result.same and result.first is None and not result
    assert "no divergence" in str(result)
    strict = compare(base, other, STRICT)
    assert {d.path for d in strict.divergences} >= {"result.fetched_at", "result.request_id"}


def test_task_and_input(base: Path, tmp_path: Path) -> None:
    result = compare(base, _tape(tmp_path / "b.jsonl", task="audit"))
    assert result.first is not None and result.first.kind == "task"
    assert (result.first.left, result.first.right) == ("restock", "audit")


def test_args_result_and_output(base: Path, tmp_path: Path) -> None:
    STOCK["b"] = 0
    result = compare(base, _tape(tmp_path / "b.jsonl", sku="b"))
    kinds = [d.kind for d in result.divergences]
    assert kinds[0] == "input"  # behaviour and task before data
    args = result.of_kind("args")
    assert any(d.step == "lookup#1" and d.path == "args.sku" and (d.left, d.right) == ("a", "b") for d in args)
    assert any(d.path == "result.stock" and (d.left, d.right) == (3, 0) for d in result.of_kind("result"))
    assert any(d.path == "output.sku" for d in result.of_kind("output"))
    assert kinds.index("args") < kinds.index("result") < kinds.index("output")


def test_error_types(base: Path, tmp_path: Path) -> None:
    result = compare(base, _tape(tmp_path / "b.jsonl", qty=9))
    (error,) = result.of_kind("error")
    assert error.step == "reserve#1" and error.left is None and error.right == "builtins.ValueError"


def test_extra_and_missing_steps_and_side_effect_calls(base: Path, tmp_path: Path) -> None:
    extra = compare(base, _tape(tmp_path / "b.jsonl", notify_too=True))
    (step,) = extra.of_kind("step_extra")
    assert step.step == "notify#1" and step.right["tool"] == "notify"
    missing = compare(_tape(tmp_path / "c.jsonl", notify_too=True), base)
    assert [d.step for d in missing.of_kind("step_missing")] == ["notify#1"]


def test_a_sequential_order_swap_is_an_order_divergence(base: Path, tmp_path: Path) -> None:
    result = compare(base, _tape(tmp_path / "b.jsonl", first="tags"))
    # step ids stay aligned (lookup#1, tags#1): the values agree, the order does not
    (order,) = result.divergences
    assert order.kind == "order" and order.step == "tags#1" and order.path == "order"
    assert (order.left, order.right) == ("lookup#1 before tags#1", "tags#1 before lookup#1")
    assert compare(base, tmp_path / "b.jsonl", Policy(ignore=("order",))).same


def test_order_comes_after_the_step_tree_and_before_data(base: Path, tmp_path: Path) -> None:
    STOCK["b"] = 0
    kinds = [d.kind for d in compare(base, _tape(tmp_path / "b.jsonl", first="tags", sku="b")).divergences]
    assert kinds.index("input") < kinds.index("order") < kinds.index("args") < kinds.index("result")


@tool(side_effect="read_only")
async def fetch_orders(customer: str) -> list[str]:
    await asyncio.sleep(0.01)
    return ["o-1"]


@tool(side_effect="read_only")
async def fetch_policy(customer: str) -> str:
    await asyncio.sleep(0.01)
    return "refund within 30 days"


async def _gather_agent(policy_first: bool) -> None:
    with agent_run("support"):
        calls = [fetch_orders("c"), fetch_policy("c")]
        await asyncio.gather(*(reversed(calls) if policy_first else calls))


async def _sequential_agent(policy_first: bool) -> None:
    with agent_run("support"):
        if policy_first:
            await fetch_policy("c")
            await fetch_orders("c")
        else:
            await fetch_orders("c")
            await fetch_policy("c")


def test_concurrent_steps_are_never_an_order_divergence(tmp_path: Path) -> None:
    tapes = []
    for name, policy_first in (("a", False), ("b", True)):
        path = tmp_path / f"{name}.jsonl"
        with record(path):
            asyncio.run(_gather_agent(policy_first))
        tapes.append(path)
    steps = {s.step_id: s for s in load_tape(tapes[1]).runs[0].steps}
    assert steps["fetch_policy#1"].seq < steps["fetch_orders#1"].seq  # started the other way round
    assert compare(tapes[0], tapes[1], STRICT).of_kind("order") == ()
    assert compare(tapes[1], tapes[0], STRICT).of_kind("order") == ()


def test_the_same_two_calls_awaited_one_after_the_other_are(tmp_path: Path) -> None:
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    with record(before):
        asyncio.run(_sequential_agent(policy_first=False))
    with record(after):
        asyncio.run(_sequential_agent(policy_first=True))
    (order,) = compare(before, after).of_kind("order")
    assert order.step == "fetch_policy#1"
    sequential_vs_gathered = tmp_path / "gathered.jsonl"
    with record(sequential_vs_gathered):
        asyncio.run(_gather_agent(policy_first=True))
    assert compare(before, sequential_vs_gathered).of_kind("order") == ()  # overlapped on one side


def test_policy_ignore_normalise_unordered(base: Path, tmp_path: Path) -> None:
    TAGS[:] = ["blue", "red"]
    other = _tape(tmp_path / "b.jsonl")
    assert {d.path for d in compare(base, other).divergences} == {
        "result[0].id",
        "result[0].label",
        "result[1].id",
        "result[1].label",
    }
    assert compare(base, other, Policy(unordered={"tags:result": "id"})).same
    assert compare(base, other, Policy(ignore=("tags:result*",))).same
    assert compare(base, other, Policy(normalize={"tags:result": lambda v: sorted(v, key=str)})).same
    assert not compare(base, other, Policy(unordered={"lookup:result": "id"})).same  # scoped to another tool


def test_run_count(base: Path, tmp_path: Path) -> None:
    two = tmp_path / "two.jsonl"
    with record(two):
        _agent()
        _agent()
    result = compare(base, two)
    assert result.first is not None and result.first.kind == "run_count"


def test_recorded_and_replayed_runs_compare_equal(base: Path, tmp_path: Path) -> None:
    replayed = tmp_path / "replayed.jsonl"
    with record(replayed), replay(base, stub=("reserve",)):
        _agent()
    result = compare(load_tape(base).runs[0], load_tape(replayed).runs[0])
    assert result.same, str(result)
    data = compare(base, _tape(tmp_path / "x.jsonl", sku="b")).to_json()
    assert data["same"] is False and data["divergences"][0]["kind"] == "input"


def test_parent_and_side_effect_declarations(tmp_path: Path) -> None:
    @tool(side_effect="write", name="notify")  # declared differently now
    def notify_v2(sku: str) -> str:
        return "sent"

    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    with record(before), agent_run("shop"):
        plan("restock a")
        lookup("a")
        notify("a")
    with record(after), agent_run("shop"):
        lookup("a")  # now called before the model step: another causal parent
        plan("restock a")
        notify_v2("a")
    result = compare(before, after)
    (parent,) = result.of_kind("parent")
    assert parent.step == "lookup#1" and (parent.left, parent.right) == ("plan#1", "")
    (effect,) = result.of_kind("side_effect")
    assert effect.step == "notify#1" and (effect.left, effect.right) == ("external", "write")


def test_a_different_tool_at_an_aligned_step(base: Path) -> None:
    import dataclasses

    run = load_tape(base).runs[0]
    renamed = dataclasses.replace(
        run, steps=tuple(dataclasses.replace(s, tool="lookup_v2") if s.step_id == "lookup#1" else s for s in run.steps)
    )
    (tool_change,) = compare(run, renamed).of_kind("tool")
    assert tool_change.step == "lookup#1" and (tool_change.left, tool_change.right) == ("lookup", "lookup_v2")


def test_a_replay_reports_an_order_swap_it_can_see(tmp_path: Path) -> None:
    tape = tmp_path / "sequential.jsonl"
    with record(tape):
        asyncio.run(_sequential_agent(policy_first=False))
    with replay(tape) as swapped:
        asyncio.run(_sequential_agent(policy_first=True))
    (order,) = [d for d in swapped.report if d.kind == "order"]
    assert order.tool == "fetch_orders" and "fetch_orders#1 ran before fetch_policy#1 when recorded" in order.message
    with replay(tape) as same:
        asyncio.run(_sequential_agent(policy_first=False))
    assert [d for d in same.report if d.kind == "order"] == []
    with replay(tape) as gathered:
        asyncio.run(_gather_agent(policy_first=True))  # concurrent now: never an order divergence
    assert [d for d in gathered.report if d.kind == "order"] == []


def test_the_default_policy_ignores_the_volatile_model_fields(tmp_path: Path) -> None:
    @model_call(provider="test")
    def chat(model: str, messages: list[dict[str, str]], user: str) -> dict[str, object]:
        return {"id": "x", "created": int(user[-1]), "system_fingerprint": f"fp_{user}", "choices": [{"text": "hi"}]}

    tapes = []
    for n in (1, 2):
        path = tmp_path / f"{n}.jsonl"
        with record(path), agent_run("a"):
            chat("m", [{"role": "tool", "tool_call_id": f"call_{n}", "content": "x"}], user=f"u{n}")
        tapes.append(path)
    assert compare(*tapes).same
    assert compare(*tapes, Policy(ignore=())).same  # model steps drop their volatile fields before the ignore list
    assert not compare(*tapes, Policy(ignore=(), model_volatile=False)).same
