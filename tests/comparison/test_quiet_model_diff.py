"""Two recordings of the same behaviour against a provider that mints fresh ids compare equal (``diff``
exits 0); a changed tool argument is still named (exit 1). OpenAI and Anthropic, JSON and streamed,
through the real SDKs over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from helpers.minting_server import minting_provider
from helpers.weather_agents import CASES
from helpers.weather_agents import record_weather as _record

from otel_agent_replay.cli import main
from otel_agent_replay.comparison import STRICT, Policy, compare


@pytest.mark.parametrize(("which", "stream"), CASES, ids=[f"{w}-{'stream' if s else 'json'}" for w, s in CASES])
def test_same_behaviour_recorded_twice_diffs_equal_and_a_changed_tool_argument_is_named(
    tmp_path: Path, which: str, stream: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    with minting_provider() as provider:
        assert "sunny in Paris" in _record(provider, which, stream, "Paris", a)
        _record(provider, which, stream, "Paris", b)
        _record(provider, which, stream, "Oslo", c)
        assert len(provider.requests) == 6
    # the recordings really differ in their minted ids: a comparison that ignores nothing sees them
    assert not compare(a, b, STRICT).same
    assert not compare(a, b, Policy(model_volatile=False)).same  # the default ignore list alone did not do it
    assert main(["diff", str(a), str(b)]) == 0
    assert "same" in capsys.readouterr().out
    assert main(["diff", str(a), str(c), "--json"]) == 1
    found = orjson.loads(capsys.readouterr().out)["divergences"]
    tool_steps = [d for d in found if d["path"] == "args.city"]
    assert tool_steps and tool_steps[0]["left"] == "Paris" and tool_steps[0]["right"] == "Oslo"
    # the model's own answer names the changed argument too, by its path in the assembled answer
    assert any("Oslo" in json.dumps(d["right"]) and d["kind"] == "result" for d in found)
