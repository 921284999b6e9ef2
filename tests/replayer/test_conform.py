"""Live conformance: one live call per read-only tool, its result's shape against the fixtures'."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_agent_replay import agent_run, conform, record, tool
from otel_agent_replay.cli import main
from otel_agent_replay.comparison import shape_changes, shape_of

LIVE: dict[str, Any] = {}
CALLS: list[str] = []


@tool(side_effect="read_only")
def profile(customer: str) -> dict[str, Any]:
    CALLS.append(f"profile {customer}")
    return LIVE.get("profile", {"id": customer, "name": "Ada", "tier": "gold"})


@tool(side_effect="read_only")
def balance(account: str) -> dict[str, Any]:
    CALLS.append(f"balance {account}")
    return LIVE.get("balance", {"account": account, "amount": 12})


@tool(side_effect="read_only")
def catalog(query: str, limit: int = 2) -> list[dict[str, Any]]:
    CALLS.append(f"catalog {query}")
    return [{"sku": f"s-{i}", "price": 1.5 * i, "tags": ["a"]} for i in range(limit)]


@tool(side_effect="write")
def refund(order: str) -> str:
    CALLS.append(f"refund {order}")
    return "refunded"


@tool(side_effect="read_only")
def flaky(n: int) -> dict[str, int]:
    CALLS.append(f"flaky {n}")
    if LIVE.get("flaky_fails"):
        raise ConnectionError("upstream down")
    return {"n": n}


def _record(path: Path) -> Path:
    LIVE.clear()
    with record(path), agent_run("support"):
        profile("c-1")
        profile("c-2")
        balance("acc-9")
        catalog("shoes")
        catalog("hats", limit=3)
        refund("o-1")
        flaky(1)
    CALLS.clear()
    return path


def test_three_tools_three_findings_and_the_write_tool_is_never_called(tmp_path: Path) -> None:
    tape = _record(tmp_path / "t.jsonl")
    LIVE["profile"] = {"id": "c-1", "name": "Ada"}  # lost a key
    LIVE["balance"] = {"account": "acc-9", "amount": "12.00"}  # changed a type
    result = conform(tape, [profile, balance, catalog, refund, flaky])
    assert not result.ok
    lost, changed, same = result.of("profile"), result.of("balance"), result.of("catalog")
    assert (lost.status, [(c.kind, c.path) for c in lost.changes]) == ("changed", [("missing_key", "result.tier")])
    assert (changed.status, [(c.kind, c.path, c.actual) for c in changed.changes]) == (
        "changed",
        [("type_change", "result.amount", "string")],
    )
    assert (same.status, same.changes) == ("ok", ())
    assert result.of("refund").status == "skipped" and "never called" in result.of("refund").reason
    assert "refund o-1" not in CALLS  # a write tool on the tape is never called
    assert sorted(CALLS) == ["balance acc-9", "catalog shoes", "flaky 1", "profile c-1"]  # one live call each
    assert lost.arguments == {"customer": "c-1"} and same.recorded_results == 2
    assert "missing key: result.tier: missing (every recorded result has it)" in str(result)


def test_a_live_error_is_an_error_status_finding(tmp_path: Path) -> None:
    tape = _record(tmp_path / "t.jsonl")
    LIVE["flaky_fails"] = True
    result = conform(tape, {"flaky": flaky})
    flaky_result = result.of("flaky")
    assert flaky_result.status == "error" and flaky_result.reason == "builtins.ConnectionError: upstream down"
    assert flaky_result.findings == ("error status: builtins.ConnectionError: upstream down",)
    assert result.of("profile").status == "skipped"  # not among the tools given: not called
    assert CALLS == ["flaky 1"]


def test_shapes_merge_every_recorded_result() -> None:
    shape = shape_of([{"a": 1, "b": [{"x": 1.5}]}, {"a": 2, "b": [], "c": None}])
    assert shape.required == {"a", "b"}
    assert shape_changes(shape, {"a": 3, "b": [{"x": 2}]}) == []  # an integer where numbers were is a number
    assert [(c.kind, c.path) for c in shape_changes(shape, {"a": "3", "b": [{"x": "no"}], "d": 1})] == [
        ("type_change", "result.a"),
        ("type_change", "result.b[*].x"),
        ("new_key", "result.d"),
    ]


def test_the_conform_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any) -> None:
    tape = _record(tmp_path / "t.jsonl")
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_tools.py").write_text(
        textwrap.dedent(
            """
            from otel_agent_replay import tool

            CALLED = []

            @tool(side_effect="read_only")
            def profile(customer: str) -> dict:
                return {"id": customer, "name": "Ada"}

            @tool(side_effect="read_only")
            def catalog(query: str, limit: int = 2) -> list:
                return [{"sku": "s", "price": 2.0, "tags": []}]

            @tool(side_effect="write")
            def refund(order: str) -> str:
                raise SystemExit("refund must never run")

            REGISTRY = {"catalog": catalog}
            """
        )
    )
    monkeypatch.chdir(project)
    monkeypatch.delitem(sys.modules, "my_tools", raising=False)
    assert main(["conform", str(tape), "--tools", "my_tools", "--json"]) == 1
    report = orjson.loads(capsysbinary.readouterr().out)
    tools = {t["tool"]: t for t in report["tools"]}
    assert tools["profile"]["findings"] == [
        {"kind": "missing_key", "path": "result.tier", "recorded": ["string"], "live": None}
    ]
    assert tools["catalog"]["status"] == "ok" and tools["refund"]["status"] == "skipped"
    assert main(["conform", str(tape), "--tools", "my_tools:REGISTRY"]) == 0
    text = capsysbinary.readouterr().out.decode()
    assert "ok catalog" in text and "1 tool(s) called live" in text
    assert main(["conform", str(tape), "--tools", "no_such_module_here"]) == 2
    assert b"cannot import 'no_such_module_here'" in capsysbinary.readouterr().err


def _nested_project(project: Path, marker: Path) -> None:
    project.mkdir()
    (project / "nested_tools.py").write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path

            from otel_agent_replay import tool

            @tool(side_effect="write")
            def write_marker(text: str) -> None:
                Path({str(marker)!r}).write_text(text)

            @tool(side_effect="read_only")
            def lookup(key: str) -> dict:
                write_marker(key)  # a "read-only" tool that writes
                return {{"key": key}}

            @tool(side_effect="read_only")
            def careful(key: str) -> dict:
                try:
                    write_marker(key)
                except Exception:
                    pass  # swallows the refusal: still reported
                return {{"key": key}}
            """
        )
    )


def test_a_write_tool_inside_a_read_only_tool_is_refused_reported_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: Any
) -> None:
    @tool(side_effect="read_only")
    def lookup(key: str) -> dict[str, str]:
        return {"key": key}

    @tool(side_effect="read_only")
    def careful(key: str) -> dict[str, str]:
        return {"key": key}

    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("agent"):
        lookup("k")
        careful("k")
    marker = tmp_path / "marker.txt"
    _nested_project(tmp_path / "project", marker)
    monkeypatch.chdir(tmp_path / "project")
    monkeypatch.delitem(sys.modules, "nested_tools", raising=False)
    assert main(["conform", str(tape), "--tools", "nested_tools"]) == 1
    text = capsysbinary.readouterr().out.decode()
    assert not marker.exists(), "the write tool ran during conform"
    assert "refused lookup" in text and "refused careful" in text
    assert "refused side effect: write_marker is not read-only and was not run" in text
    assert main(["conform", str(tape), "--tools", "nested_tools", "--json"]) == 1
    report = orjson.loads(capsysbinary.readouterr().out)
    assert not report["ok"] and not marker.exists()
    tools = {t["tool"]: t for t in report["tools"]}
    assert tools["lookup"]["status"] == "refused"
    assert tools["lookup"]["findings"] == [
        {"kind": "refused_side_effect", "path": "", "recorded": None, "live": "write_marker"}
    ]
