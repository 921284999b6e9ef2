"""An openai-SDK agent for the time-travel tests: two read-only searches, a branch on what the second one
found, a summary by the model, and a write tool that leaves a marker file.

``run()`` reads the provider's URL, the marker folder and the summary style from the environment, so the
CLI's ``fork --agent helpers.fork_agent:run`` can call it with no arguments; ``research(task)`` is the same
agent taking its task, as agents usually do (the CLI calls it with the recorded run's input).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import openai

from otel_agent_replay import agent_run, tool

SEARCHED: list[str] = []
CATALOGUE = {"lamp": ["brass lamp"], "desk": ["oak desk"], "chair": ["red chair"]}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the catalogue.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}


@tool(side_effect="read_only")
def search(query: str) -> dict[str, Any]:
    """Search the catalogue (counted in SEARCHED when it really runs)."""
    SEARCHED.append(query)
    return {"results": CATALOGUE.get(query, [])}


@tool(side_effect="write")
def send_report(text: str) -> dict[str, Any]:
    """Send the report: leaves a marker file, so a test sees whether it ran."""
    marker = Path(os.environ["FORK_AGENT_MARKERS"]) / "report-sent"
    marker.write_text(text)
    return {"sent": True}


def shop(url: str, style: str = "briefly", task: str = "Find a lamp and a desk") -> str:
    """The agent: ask, search twice, branch, summarise, report."""
    client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    first = client.chat.completions.create(model="gpt-test", messages=messages, tools=[SEARCH_TOOL])  # type: ignore[arg-type]
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    try:
        found = {"lamp": search("lamp"), "desk": search("desk")}
    except TimeoutError:
        return "the search timed out"
    if not found["desk"]["results"]:  # the other branch: no desk, look for a chair instead
        found["chair"] = search("chair")
    for call in message.tool_calls or []:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(found, sort_keys=True)})
    messages.append({"role": "user", "content": f"Summarise {style}"})
    summary = client.chat.completions.create(model="gpt-test", messages=messages)  # type: ignore[arg-type]
    text = summary.choices[0].message.content or ""
    send_report(text)
    return text


@agent_run("research")
def research(task: str) -> str:
    """The agent as users write it: it takes its task (``fork --agent`` calls it with the recorded input)."""
    return shop(os.environ["FORK_AGENT_URL"], task=task)


def run() -> str:
    """``shop`` with its settings from the environment (for the CLI)."""
    return shop(os.environ["FORK_AGENT_URL"], os.environ.get("FORK_AGENT_STYLE", "briefly"))
