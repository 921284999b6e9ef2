"""MCP with no server: a stdio agent recorded once replays with no process spawned and no connection made;
discovery before the run records and replays; the destructive tool never runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from otel_agent_replay import ReplayWarning, SideEffectRefused, agent_run, load_tape, record, replay
from otel_agent_replay.integrations import patched

SERVER = Path(__file__).parent / "mcp_crm_server.py"  # its folder holds no module named like a standard one


def _params(marker_dir: Path, *, broken: bool = False) -> StdioServerParameters:
    if broken:  # a server command that cannot serve: it notes that it started, then exits at once
        code = f"import pathlib; pathlib.Path({str(marker_dir)!r}, 'started').write_text('yes')"
        return StdioServerParameters(command=sys.executable, args=["-c", code])
    return StdioServerParameters(command=sys.executable, args=[str(SERVER), str(marker_dir)])


async def _agent(params: StdioServerParameters, *, delete: bool = True) -> tuple[list[str], list[Any]]:
    async with Client(params) as client:
        listing = await client.list_tools()  # discovery before the agent's run
        with agent_run("crm-agent"):
            found = await client.call_tool("lookup", {"customer": "ada"})
            results = [found]
            if delete:
                results.append(await client.call_tool("delete_customer", {"customer": "bob"}))
    return [tool.name for tool in listing.tools], results


def _texts(results: list[Any]) -> list[str]:
    return [block.text for result in results for block in result.content]


def test_a_stdio_agent_replays_with_no_server(tape: Path, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    with record(tape, agent="crm"):
        names, live = asyncio.run(_agent(_params(markers)))
    assert (markers / "started").exists() and (markers / "deleted-bob").exists()
    for marker in markers.iterdir():
        marker.unlink()
    assert not patched()

    with replay(tape, stub=["delete_customer"]) as session:
        names_again, replayed = asyncio.run(_agent(_params(markers, broken=True)))
    assert names_again == names == ["lookup", "delete_customer"]
    assert _texts(replayed) == _texts(live) == ["ada: gold tier", "deleted bob"]
    assert type(replayed[0]) is type(live[0])
    assert list(markers.iterdir()) == []  # nothing spawned, and the destructive tool never ran
    assert session.stats.unused == 0 and session.stats.stubbed_side_effects == 1
    steps = {step.tool for run in load_tape(tape).runs for step in run.steps}
    assert {"mcp.list_tools", "lookup", "delete_customer"} <= steps
    assert steps & {"mcp.initialize", "mcp.server/discover"}  # the handshake (2.x negotiates: discover first)
    assert not patched()


def test_a_destructive_tool_is_refused_with_no_server(tape: Path, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    with record(tape):
        asyncio.run(_agent(_params(markers)))
    for marker in markers.iterdir():
        marker.unlink()
    with pytest.raises(SideEffectRefused, match="delete_customer"), replay(tape):
        asyncio.run(_agent(_params(markers, broken=True)))
    assert list(markers.iterdir()) == []


@pytest.mark.parametrize("mode", ["new_episodes", "once"])
def test_a_replay_that_talks_to_the_live_stdio_server_uses_the_recorded_handshake(
    tape: Path, tmp_path: Path, mode: str
) -> None:
    """``new_episodes`` (and ``once`` of a recorded tape) start the real server, since a miss may run live:
    the handshake goes to it, and its recorded steps are matched, never left unused."""
    markers = tmp_path / "markers"
    markers.mkdir()
    with record(tape):
        asyncio.run(_agent(_params(markers), delete=False))
    recorded = {step.tool for run in load_tape(tape).runs for step in run.steps}
    assert recorded & {"mcp.initialize", "mcp.server/discover"} and "mcp.list_tools" in recorded
    lines = len(tape.read_bytes().splitlines())
    (markers / "started").unlink()

    with (
        pytest.warns(ReplayWarning, match="started a process"),  # the live server: said, and counted
        replay(tape, mode=mode) as session,
    ):
        names, results = asyncio.run(_agent(_params(markers), delete=False))
    assert (markers / "started").exists()  # the live server ran, and answered the handshake
    assert names == ["lookup", "delete_customer"] and _texts(results) == ["ada: gold tier"]
    assert session.stats.unused == 0 and session.stats.misses == 0 and session.stats.child_processes == 1
    assert session.stats.live_tool_calls == 0  # every call, the handshake's included, matched the tape
    assert len(tape.read_bytes().splitlines()) == lines  # and nothing was appended
