"""MCP tools through the real ``mcp`` package (the 2.x ``Client`` and the ``ClientSession`` under it),
against an in-memory ``MCPServer``: read-only tools replay offline, the others are refused in a replay
and never reach the server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers.rawtape import steps_of
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ListToolsResult, ToolAnnotations

from otel_agent_replay import SideEffectRefused, agent_run, record, replay
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import patched

# An in-process MCPServer writes its own ``tools/call`` spans (no recorded arguments) into the same
# tape; the loader skips them with a warning. A server in another process (stdio, HTTP) does not.
pytestmark = pytest.mark.filterwarnings("ignore:.*without recorded arguments")


def _server(calls: list[str]) -> MCPServer:
    server = MCPServer("crm")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(customer: str) -> str:
        """Find a customer."""
        calls.append("lookup")
        return f"{customer}: gold tier"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def delete_customer(customer: str) -> str:
        """Delete a customer."""
        calls.append("delete_customer")
        return f"deleted {customer}"

    @server.tool()
    def send_email(to: str) -> str:
        """Send an email."""
        calls.append("send_email")
        return f"sent to {to}"

    return server


async def _agent(server: MCPServer) -> tuple[ListToolsResult, list[Any]]:
    async with Client(server) as client:
        listing = await client.list_tools()
        found = await client.call_tool("lookup", {"customer": "ada"})
        deleted = await client.call_tool("delete_customer", {"customer": "bob"})
        sent = await client.call_tool("send_email", {"to": "ada@example.com"})
    return listing, [found, deleted, sent]


def test_mcp_tools_record_with_side_effects_from_annotations(tape: Path) -> None:
    calls: list[str] = []

    async def go() -> tuple[ListToolsResult, list[Any]]:
        with record(tape), agent_run("crm"):
            return await _agent(_server(calls))

    listing, results = asyncio.run(go())
    assert calls == ["lookup", "delete_customer", "send_email"]
    assert {t.name for t in listing.tools} == {"lookup", "delete_customer", "send_email"}
    assert all(isinstance(r, CallToolResult) for r in results)
    steps = {s.attrs[A.GEN_AI_TOOL_NAME]: s.attrs for s in steps_of(tape)}
    assert steps["mcp.list_tools"][A.SIDE_EFFECT] == "read_only"
    assert steps["lookup"][A.SIDE_EFFECT] == "read_only"
    assert steps["delete_customer"][A.SIDE_EFFECT] == "write"
    assert steps["send_email"][A.SIDE_EFFECT] == "external"
    assert '"customer":"ada"' in steps["lookup"][A.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert not patched()


def test_mcp_replay_serves_read_only_tools_and_refuses_the_others_before_the_server(tape: Path) -> None:
    calls: list[str] = []

    async def record_it() -> list[Any]:
        with record(tape), agent_run("crm"):
            return (await _agent(_server(calls)))[1]

    recorded = asyncio.run(record_it())
    calls.clear()
    seen: dict[str, Any] = {}

    async def replay_it() -> None:
        with replay(tape) as session:
            async with Client(_server(calls)) as client:
                seen["listing"] = await client.list_tools()
                seen["found"] = await client.call_tool("lookup", {"customer": "ada"})
                for name, args in (("delete_customer", {"customer": "bob"}), ("send_email", {"to": "ada@example.com"})):
                    with pytest.raises(SideEffectRefused, match=name):
                        await client.call_tool(name, args)
                seen["stats"] = session.stats

    with pytest.raises(SideEffectRefused):  # refusals the agent caught still fail the block at its end
        asyncio.run(replay_it())
    assert calls == []  # no tool reached the server
    assert isinstance(seen["listing"], ListToolsResult) and {t.name for t in seen["listing"].tools} >= {"lookup"}
    assert isinstance(seen["found"], CallToolResult) and seen["found"] == recorded[0]
    stats = seen["stats"]
    assert (stats.hits, stats.refused_side_effects, stats.live_tool_calls) == (2, 2, 0)
    assert not patched()
