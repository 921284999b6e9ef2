"""Spans of other instrumentation on a tape (an MCP SDK's, a framework's own) make no phantom run, no
warning on load or replay, and no ``check`` failure.

The MCP spans are the real ``mcp`` 2.x SDK's (an in-process ``Client`` call: the server's own
``tools/call`` span inside our step). The real google-adk's own spans are in
``tests/integrations/test_google_adk.py`` (a venv of its own); here a framework's ``invoke_agent`` span
*above* the run, and its tool spans around and beside our steps, are made with the OpenTelemetry SDK.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.agent_replay_tape import TapeSpanExporter, TapeSpanProcessor
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_agent_replay import AgentReplayWarning, agent_run, load_tape, record, replay, tool
from otel_agent_replay.cli import main
from otel_agent_replay.recorder._record import ensure_provider


def _no_warnings(block: Callable[[], object]) -> object:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = block()
    ours = [str(w.message) for w in seen if issubclass(w.category, AgentReplayWarning)]
    assert ours == []
    return result


def _passes_check_and_shows_one_run(tape: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["check", str(tape)]) == 0, capsys.readouterr().out
    assert main(["show", str(tape)]) == 0
    out = capsys.readouterr().out
    assert sum(1 for line in out.splitlines() if line.startswith("run ")) == 1, out
    assert "warning" not in out


# --- the MCP 2.x SDK's own spans ------------------------------------------------------------------


def _crm(calls: list[str]) -> MCPServer:
    server = MCPServer("crm")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(customer: str) -> str:
        """Find a customer."""
        calls.append(customer)
        return f"{customer}: gold tier"

    return server


async def _mcp_agent(calls: list[str]) -> list[Any]:
    async with Client(_crm(calls)) as client:
        await client.list_tools()
        return [await client.call_tool("lookup", {"customer": c}) for c in ("ada", "bob")]


def test_an_in_process_mcp_client_tape_loads_checks_and_replays_without_warnings(
    tape: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []

    async def recorded() -> list[Any]:
        with record(tape), agent_run("crm"):
            return await _mcp_agent(calls)

    first = asyncio.run(recorded())
    raw = tape.read_text(encoding="utf-8")
    assert '"tools/call lookup"' in raw and "mcp-python-sdk" in raw  # the SDK's own spans are on the tape
    (run,) = _no_warnings(lambda: load_tape(tape)).runs  # type: ignore[attr-defined]
    assert [s.tool for s in run.steps] == ["mcp.list_tools", "lookup", "lookup"]
    _passes_check_and_shows_one_run(tape, capsys)

    async def replayed() -> list[Any]:
        with replay(tape) as session, agent_run("crm"):
            out = await _mcp_agent(calls)
        assert session.stats.hits == 3
        return out

    assert _no_warnings(lambda: asyncio.run(replayed())) == first
    assert calls == ["ada", "bob"]  # the replay reached no server


# --- a framework's own spans ------------------------------------------------------------------------

_framework = trace.get_tracer("example.agent.framework", "1.0.0")


@tool(side_effect="read_only")
def weather(city: str) -> str:
    return f"sunny in {city}"


def _framework_tools(calls: list[str]) -> list[str]:
    """A framework's tool spans: one around our ``@tool`` (a second view of it), one without arguments and
    one with arguments around a plain function (its own telemetry of a call no capture point saw)."""
    out = []
    with _framework.start_as_current_span(
        "execute_tool weather", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather"}
    ):
        out.append(weather("Oslo"))
    for args in (None, '{"city": "Lima"}'):
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "forecast"}
        if args is not None:
            attributes["gen_ai.tool.call.arguments"] = args
        with _framework.start_as_current_span("execute_tool forecast", attributes=attributes):
            calls.append("Lima")
            out.append("rain in Lima")
    return out


def test_a_frameworks_tool_spans_inside_a_run_of_ours_replay_with_no_warning_and_nothing_unused(
    tape: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    with record(tape), agent_run("planner"):
        _framework_tools(calls)
    (run,) = _no_warnings(lambda: load_tape(tape)).runs  # type: ignore[attr-defined]
    # ours, then the framework's span with arguments (a step a double could replay); the argless one is not
    assert [s.step_id for s in run.steps] == ["weather#1", "forecast#1"]
    _passes_check_and_shows_one_run(tape, capsys)

    def replayed() -> list[str]:
        with replay(tape) as session, agent_run("planner"):
            out = _framework_tools(calls)
        assert session.stats.hits == 1 and session.stats.unused == 0
        return out

    assert _no_warnings(replayed) == ["sunny in Oslo", "rain in Lima", "rain in Lima"]


class _WholeTrace(SpanProcessor):
    """Every span of the provider to a tape while on, as a Collector's file export of the trace would have it."""

    def __init__(self, path: Path) -> None:
        self.tape = TapeSpanProcessor(TapeSpanExporter(path))
        self.on = True

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if self.on:
            self.tape.on_end(span)


@pytest.fixture
def whole_trace(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "whole-trace.jsonl"
    processor = _WholeTrace(path)
    ensure_provider().add_span_processor(processor)
    yield path
    processor.on = False
    processor.tape.shutdown()


def test_a_frameworks_agent_span_above_the_run_is_not_a_run(
    tape: Path, whole_trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        record(tape),
        _framework.start_as_current_span(
            "invoke_agent planner", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
        ),
        agent_run("planner"),
        _framework.start_as_current_span(
            "execute_tool weather", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather"}
        ),
    ):
        weather("Oslo")
    assert whole_trace.read_text(encoding="utf-8").count('"example.agent.framework"') == 2
    (run,) = _no_warnings(lambda: load_tape(whole_trace)).runs  # type: ignore[attr-defined]
    assert run.agent_name == "planner" and [s.step_id for s in run.steps] == ["weather#1"]
