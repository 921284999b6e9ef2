"""An MCP 1.x agent (``stdio_client`` + ``ClientSession``), recorded with its server and replayed with a
server command that cannot serve: run by ``tests/integrations/test_mcp1.py`` in the MCP 1.x virtual
environment (``scripts/dev.sh``: ``AGENT_REPLAY_MCP1_PYTHON``). It prints one JSON line of facts.

    python agent.py TAPE MARKER_DIR
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from otel_agent_replay import SideEffectRefused, agent_run, load_tape, record, replay

SERVER = Path(__file__).with_name("crm_server.py")


def _params(markers: Path, *, broken: bool = False) -> StdioServerParameters:
    if broken:  # notes that it started, then exits at once: it cannot serve
        code = f"import pathlib; pathlib.Path({str(markers)!r}, 'started').write_text('yes')"
        return StdioServerParameters(command=sys.executable, args=["-c", code])
    return StdioServerParameters(command=sys.executable, args=[str(SERVER), str(markers)])


async def _agent(params: StdioServerParameters, *, delete: bool = True) -> tuple[list[str], list[Any]]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listing = await session.list_tools()  # discovery before the agent's run
        with agent_run("crm-agent"):
            results = [await session.call_tool("lookup", {"customer": "ada"})]
            if delete:
                results.append(await session.call_tool("delete_customer", {"customer": "bob"}))
    return [tool.name for tool in listing.tools], results


async def _http_agent(url: str) -> list[Any]:
    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()  # the tools' annotations: lookup is read-only
        with agent_run("crm-agent"):
            return [await session.call_tool("lookup", {"customer": "grace"})]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def over_http(tape: Path, markers: Path) -> dict[str, Any]:
    """Streamable HTTP: recorded against the server, replayed after it has stopped (nothing listens)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen([sys.executable, str(SERVER), str(markers), str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with record(tape, agent="crm"):
            live = asyncio.run(_http_agent(url))
    finally:
        server.terminate()
        server.wait(30)
    with replay(tape) as session:
        replayed = asyncio.run(_http_agent(url))
    return {"texts": [_texts(live), _texts(replayed)], "unused": session.stats.unused}


def _texts(results: list[Any]) -> list[str]:
    return [block.text for result in results for block in result.content]


def main(tape: Path, markers: Path) -> dict[str, Any]:
    with record(tape, agent="crm"):
        names, live = asyncio.run(_agent(_params(markers)))
    recorded_markers = sorted(p.name for p in markers.iterdir())
    for marker in markers.iterdir():
        marker.unlink()
    with replay(tape, stub=["delete_customer"]) as session:
        names_again, replayed = asyncio.run(_agent(_params(markers, broken=True)))
    refused = ""
    try:
        with replay(tape):
            asyncio.run(_agent(_params(markers, broken=True)))
    except SideEffectRefused as exc:
        refused = type(exc).__name__ + ": " + str(exc).split("\n")[0]
    return {
        "mcp": mcp.__name__,
        "recorded_markers": recorded_markers,
        "replayed_markers": sorted(p.name for p in markers.iterdir()),
        "names": [names, names_again],
        "texts": [_texts(live), _texts(replayed)],
        "same_type": type(replayed[0]) is type(live[0]),
        "unused": session.stats.unused,
        "stubbed": session.stats.stubbed_side_effects,
        "steps": sorted({step.tool for run in load_tape(tape).runs for step in run.steps}),
        "refused": refused,
        "http": over_http(tape.with_name("http.jsonl"), markers),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]))))
