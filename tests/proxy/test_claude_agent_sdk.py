"""The Claude Agent SDK through ``otel-agent-replay record|replay TAPE -- python agent.py``: the real SDK
(PyPI ``claude-agent-sdk``) runs the real ``claude`` CLI (npm ``@anthropic-ai/claude-code``, on Debian's
Node 20) as its child, and the CLI calls a fake Anthropic Messages API on 127.0.0.1 that speaks the real
wire format (SSE, a ``tool_use`` block, then a final text once the tool's result is sent). The fake
stays up during the replays and counts every request it gets.

What the CLI needs besides ``ANTHROPIC_BASE_URL`` (the proxy points it at its reverse listener): an API
key (generated here), a home folder of its own, the documented switches for traffic that is not the
agent's (``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` and friends), and one thing no switch turns off:
with an API key, the CLI asks ``api.anthropic.com`` whether metrics are enabled for the organisation
(a fixed host, not the base URL), once a day; its answer is cached in ``~/.claude.json``
(``metricsStatusCache``), which the test writes so that nothing leaves loopback.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.anthropic_server import anthropic_api
from helpers.otlp_lines import attrs as _attrs
from helpers.otlp_lines import last_json as _last_json
from helpers.otlp_lines import spans as _spans

from otel_agent_replay import load_tape
from otel_agent_replay.core import attributes as A

Cli = Callable[..., subprocess.CompletedProcess[str]]
AGENT = Path(__file__).parent / "claude" / "agent.py"


@pytest.fixture(scope="session")
def claude_python() -> str:
    found = os.environ.get("AGENT_REPLAY_CLAUDE_PYTHON")
    assert found, (
        "run the tests through scripts/dev.sh test, which makes the Claude Agent SDK's environment "
        "(AGENT_REPLAY_CLAUDE_PYTHON)"
    )
    return found


@pytest.fixture(scope="session")
def claude_cli() -> str:
    found = os.environ.get("AGENT_REPLAY_CLAUDE_CLI")
    assert found, (
        "run the tests through scripts/dev.sh test, which installs the npm claude CLI (AGENT_REPLAY_CLAUDE_CLI)"
    )
    return found


def _home(folder: Path) -> Path:
    """A home folder of the CLI's own, as on a machine where it checked the metrics setting a moment ago."""
    folder.mkdir()
    cache = {"enabled": False, "timestamp": int(time.time() * 1000)}
    (folder / ".claude.json").write_text(json.dumps({"metricsStatusCache": cache}))
    return folder


def test_a_claude_agent_sdk_query_with_a_tool_is_recorded_and_replayed_sealed(
    cli: Cli, proxy_env: dict[str, str], claude_python: str, claude_cli: str, tmp_path: Path
) -> None:
    tape = tmp_path / "claude.jsonl"
    key = "sk-ant-api03-" + secrets.token_urlsafe(32)
    command = ["--", claude_python, str(AGENT)]
    with anthropic_api() as api:
        env = {
            **proxy_env,
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": key,
            "AGENT_REPLAY_CLAUDE_CLI": claude_cli,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        recorded = cli(
            "record", str(tape), *command, env={**env, "HOME": str(_home(tmp_path / "home-record"))}, cwd=tmp_path
        )
        assert recorded.returncode == 0, recorded.stderr
        live = _last_json(recorded.stdout)
        assert live["answer"] == "The weather tool says: sunny in Paris, 21 C"
        assert live["tools_used"] == ["mcp__weather__get_weather"]
        assert live["tool_asked"] == [{"city": "Paris"}]
        assert live["is_error"] is False
        # the CLI's two model calls reached the fake, streamed, and nothing else did
        assert [(s.method, s.path) for s in api.requests] == [("POST", "/v1/messages?beta=true")] * 2
        first, second = (s.body for s in api.requests)
        assert first["stream"] is True and second["stream"] is True
        assert [t["name"] for t in first["tools"]] == ["mcp__weather__get_weather"]
        assert any(p.get("type") == "tool_result" for m in second["messages"] for p in m["content"])

        (run,) = load_tape(tape).runs
        assert run.agent_name == "python"
        assert [s.tool for s in run.steps] == ["anthropic.messages", "anthropic.messages"]
        chats = [_attrs(s) for s in _spans(tape) if _attrs(s).get(A.FUNCTION) == "anthropic.messages"]
        assert len(chats) == 2
        for chat in chats:
            assert chat[A.GEN_AI_PROVIDER_NAME] == "anthropic"
            assert chat[A.GEN_AI_REQUEST_MODEL] == first["model"]
            assert int(chat[A.GEN_AI_USAGE_INPUT_TOKENS]) > 0
            assert int(chat[A.GEN_AI_USAGE_OUTPUT_TOKENS]) > 0
            assert chat[A.PROCESS_COMMAND].endswith("agent.py")
        events = [e["text"] for e in run.steps[0].result["events"]]
        assert any("input_json_delta" in e for e in events)  # the tool_use block, event by event
        assert '"stop_reason": "tool_use"' in events[-2] and "message_stop" in events[-1]
        assert key not in tape.read_text()  # the x-api-key header never reaches the tape

        # a fresh home: the replay needs nothing the recording left on this machine
        replayed = cli(
            "replay", str(tape), *command, env={**env, "HOME": str(_home(tmp_path / "home-replay"))}, cwd=tmp_path
        )
        assert replayed.returncode == 0, replayed.stderr
        assert _last_json(replayed.stdout) == live  # the same answer, and the tool ran again on the replayed call
        assert "2 answered from the tape, 0 passed through" in replayed.stderr
        assert len(api.requests) == 2  # the fake is still up: nothing reached it

        drifted = cli(
            "replay",
            str(tape),
            *command,
            "What is the weather in Lyon?",
            env={**env, "HOME": str(_home(tmp_path / "home-drift"))},
            cwd=tmp_path,
        )
        assert drifted.returncode == 1, drifted.stderr
        assert '"What is the weather in Paris?" → "What is the weather in Lyon?"' in drifted.stderr
        assert len(api.requests) == 2
