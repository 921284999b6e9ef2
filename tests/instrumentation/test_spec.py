"""Tool declarations: what a decorator records about the function, and invalid ones refused."""

from __future__ import annotations

import datetime as dt

import pytest

from otel_agent_replay import ConfigurationError, agent_run, model_call, tool
from otel_agent_replay.instrumentation import tool_spec


def test_the_spec_records_the_declaration() -> None:
    @tool(side_effect="write", version="3", ttl=dt.timedelta(minutes=2), ignore=("trace",), name="save")
    async def store(key: str, trace: str = "") -> None: ...

    spec = tool_spec(store)
    assert spec is not None
    assert (spec.name, spec.kind, spec.side_effect, spec.version, spec.ttl) == ("save", "tool", "write", "3", 120.0)
    assert spec.ignore == {"trace"} and spec.leave_out == {"trace"} and spec.is_async and not spec.read_only

    @model_call(provider="p", model="m")
    def ask(prompt: str) -> str:
        return prompt

    model_spec = tool_spec(ask)
    assert model_spec is not None and model_spec.kind == "llm" and model_spec.model == "m"
    assert tool_spec(lambda: None) is None


def test_bad_declarations_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="side_effect='delete'"):
        tool(side_effect="delete")(lambda: None)
    with pytest.raises(ConfigurationError, match="not parameters"):

        @tool(ignore=("missing",))
        def f(a: int) -> None: ...

    with pytest.raises(ConfigurationError, match="ttl must be positive"):
        tool(ttl=0)(lambda: None)
    with pytest.raises(ConfigurationError, match="agent name"):
        agent_run("")
