"""Capture points whatever the import order: an MCP agent whose ``mcp`` import first happens inside the
block (a plain ``stdio_client`` agent, and an openai-agents ``Agent`` with ``MCPServerStdio``) records its
MCP steps, and its replay, in a fresh process, starts no server and runs no destructive tool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

AGENT = Path(__file__).parent / "late_mcp_agent.py"


def _run(mode: str, tape: Path, markers: Path, kind: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(AGENT), mode, str(tape), str(markers), kind],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("kind", ["stdio_client", "openai_agents"])
def test_mcp_imported_inside_the_block_is_captured(tape: Path, tmp_path: Path, kind: str) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    recorded = _run("record", tape, markers, kind)
    assert recorded["mcp_before"] is False  # the agent's first mcp import is inside record()
    assert {"lookup", "delete_customer", "mcp.list_tools"} <= set(recorded["tools"])
    assert sorted(m.name for m in markers.iterdir())[-1] == "started" and len(list(markers.iterdir())) == 2
    for marker in markers.iterdir():
        marker.unlink()

    replayed = _run("replay", tape, markers, kind)
    assert replayed["mcp_before"] is False and "error" not in replayed
    assert replayed["seen"] == recorded["seen"]
    assert list(markers.iterdir()) == []  # no server started, the destructive tool never ran
    stats = replayed["stats"]
    assert stats["child_processes"] == 0 and stats["misses"] == 0 and stats["unused"] == 0
    assert stats["stubbed_side_effects"] == 1 and stats["refused_side_effects"] == 0
