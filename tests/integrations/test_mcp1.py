"""MCP 1.x, in a virtual environment of its own (``scripts/dev.sh`` makes it: ``AGENT_REPLAY_MCP1_PYTHON``),
since one environment holds one ``mcp``: a ``stdio_client`` + ``ClientSession`` agent recorded with its
server replays with a server command that cannot serve (nothing spawned that serves, the destructive tool
never run), and a streamable-HTTP agent replays after its server has stopped."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

AGENT = Path(__file__).parent / "mcp1" / "agent.py"


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python = os.environ.get("AGENT_REPLAY_MCP1_PYTHON")
    assert python, "run the tests through scripts/dev.sh test, which sets up the MCP 1.x environment"
    work = tmp_path_factory.mktemp("mcp1")
    markers = work / "markers"
    markers.mkdir()
    done = subprocess.run(
        [python, str(AGENT), str(work / "stdio.jsonl"), str(markers)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    version = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "version": version}


def test_the_environment_has_mcp_1(facts: dict[str, Any]) -> None:
    assert facts["version"].startswith("1.")


def test_a_stdio_session_replays_with_no_server(facts: dict[str, Any]) -> None:
    assert facts["recorded_markers"] == ["deleted-bob", "started"]  # the real server ran while recording
    assert facts["replayed_markers"] == []  # no server served, the destructive tool never ran
    assert facts["names"] == [["lookup", "delete_customer"]] * 2
    assert facts["texts"] == [["ada: gold tier", "deleted bob"]] * 2 and facts["same_type"]
    assert facts["unused"] == 0 and facts["stubbed"] == 1
    assert facts["steps"] == ["delete_customer", "lookup", "mcp.initialize", "mcp.list_tools"]
    assert facts["refused"].startswith("SideEffectRefused: delete_customer")


def test_a_streamable_http_session_replays_after_its_server_stopped(facts: dict[str, Any]) -> None:
    """1.x's transport yields a third value (get_session_id), and ends its session with a DELETE that is
    MCP's own traffic, not an HTTP step of the agent's (else the replay would find it unused)."""
    assert facts["http"] == {"texts": [["grace: gold tier"]] * 2, "unused": 0}
