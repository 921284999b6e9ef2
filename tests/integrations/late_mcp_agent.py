"""An MCP agent whose ``mcp`` import happens only inside the block, run as a process of its own:

    python late_mcp_agent.py record|replay TAPE MARKER_DIR stdio_client|openai_agents

``stdio_client`` is a plain ``ClientSession`` over ``stdio_client``; ``openai_agents`` an openai-agents
``Agent`` with ``MCPServerStdio`` and a model served by the fake provider (while recording; the replay
has none). Both use ``mcp_crm_server.py``, whose ``delete_customer`` leaves a marker file. Prints one
JSON line: what the agent saw, whether ``mcp`` was imported before the block, the tape's tools and the
replay's counters.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))  # tests/: the helpers

from helpers.model_server import fake_provider

from otel_agent_replay import load_tape, record, replay

SERVER = Path(__file__).parent / "mcp_crm_server.py"


async def _plain(markers: str, url: str) -> list[str]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    seen: list[str] = []
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), markers])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        seen += [tool.name for tool in (await session.list_tools()).tools]
        seen.append((await session.call_tool("lookup", {"customer": "ada"})).content[0].text)
        try:
            seen.append((await session.call_tool("delete_customer", {"customer": "bob"})).content[0].text)
        except Exception as exc:
            seen.append(type(exc).__name__)
    return seen


async def _openai_agents(markers: str, url: str) -> list[str]:
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio

    set_tracing_disabled(True)  # the SDK's own tracing would send to OpenAI
    client = openai.AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0)
    params = {"command": sys.executable, "args": [str(SERVER), markers]}
    async with MCPServerStdio(params=params, name="crm", cache_tools_list=True) as server:  # type: ignore[arg-type]
        agent = Agent(
            name="crm",
            instructions="You look customers up.",
            model=OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
            mcp_servers=[server],
        )
        try:
            result = await Runner.run(agent, "Look up ada")
        except Exception as exc:
            return [type(exc).__name__]
        return [str(result.final_output)]


def main() -> None:
    mode, tape, markers, kind = sys.argv[1:5]
    agent = {"stdio_client": _plain, "openai_agents": _openai_agents}[kind]
    out: dict[str, Any] = {"mcp_before": "mcp" in sys.modules}
    if mode == "record":
        with fake_provider() as fp, record(tape, agent=kind):
            out["seen"] = asyncio.run(agent(markers, fp.openai_url))
        out["tools"] = sorted({step.tool for run in load_tape(tape).runs for step in run.steps})
    else:
        session = None
        try:
            with replay(tape, stub=["delete_customer"]) as session:  # its recorded answer, never run
                out["seen"] = asyncio.run(agent(markers, "http://127.0.0.1:9/v1"))  # no provider: the tape answers
        except Exception as exc:
            out["error"] = type(exc).__name__
        assert session is not None
        stats = session.stats
        out["stats"] = {
            k: getattr(stats, k)
            for k in ("hits", "stubbed_side_effects", "refused_side_effects", "child_processes", "misses", "unused")
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
