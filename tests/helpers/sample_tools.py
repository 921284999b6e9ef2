"""Small decorated tools shared by the instrumentation tests."""

from __future__ import annotations

from typing import Any

from otel_agent_replay import model_call, tool


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
