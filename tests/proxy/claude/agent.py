"""An agent on the Claude Agent SDK: one query, one tool of its own (an in-process MCP tool).

The SDK runs the ``claude`` CLI (``AGENT_REPLAY_CLAUDE_CLI``) as a child process; the CLI calls the
Messages API at ``ANTHROPIC_BASE_URL``. Prints, last, one JSON line: the final answer, what the tool
was asked, the number of turns and whether the SDK reported an error.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    ToolUseBlock,
    create_sdk_mcp_server,
    query,
    tool,
)

asked: list[dict[str, Any]] = []


@tool("get_weather", "The weather in a city", {"city": str})
async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    asked.append(dict(args))
    return {"content": [{"type": "text", "text": f"sunny in {args['city']}, 21 C"}]}


async def main(prompt: str) -> dict[str, Any]:
    options = ClaudeAgentOptions(
        cli_path=os.environ["AGENT_REPLAY_CLAUDE_CLI"],
        mcp_servers={"weather": create_sdk_mcp_server("weather", tools=[get_weather])},
        allowed_tools=["mcp__weather__get_weather"],
        tools=[],  # none of the CLI's own tools: only ours
        setting_sources=[],  # no user or project settings, no CLAUDE.md
        max_turns=4,
        stderr=lambda line: print(f"claude: {line}", file=sys.stderr),
    )
    used: list[str] = []
    out: dict[str, Any] = {}
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, AssistantMessage):
            used += [block.name for block in message.content if isinstance(block, ToolUseBlock)]
        elif isinstance(message, ResultMessage):
            out = {"answer": message.result, "is_error": message.is_error, "turns": message.num_turns}
    return {**out, "tools_used": used, "tool_asked": asked}


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, " ".join(sys.argv[1:]) or "What is the weather in Paris?")), flush=True)
