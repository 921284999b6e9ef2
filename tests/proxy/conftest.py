"""What the proxy tests need: mitmproxy's ``mitmdump`` and the npm packages, set up by ``scripts/dev.sh``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

NODE_AGENTS = Path(__file__).parent / "node"


@pytest.fixture(scope="session")
def mitmdump() -> str:
    found = os.environ.get("AGENT_REPLAY_MITMDUMP") or shutil.which("mitmdump")
    assert found, (
        "run the tests through scripts/dev.sh test, which makes mitmproxy's environment (AGENT_REPLAY_MITMDUMP)"
    )
    return found


@pytest.fixture(scope="session")
def node_modules() -> Path:
    found = os.environ.get("AGENT_REPLAY_NODE_MODULES")
    assert found, (
        "run the tests through scripts/dev.sh test, which installs the npm packages (AGENT_REPLAY_NODE_MODULES)"
    )
    path = Path(found)
    assert (path / "openai" / "package.json").is_file(), f"{path} has no npm openai package: run scripts/dev.sh test"
    return path


@pytest.fixture
def node_agent(tmp_path: Path, node_modules: Path) -> Path:
    """A folder with the Node agents beside the npm packages (ES modules resolve from the file's folder)."""
    folder = tmp_path / "node-agent"
    folder.mkdir()
    for script in NODE_AGENTS.glob("*.mjs"):
        shutil.copy(script, folder / script.name)
    (folder / "node_modules").symlink_to(node_modules)
    return folder


def run_cli(
    *args: str, env: Mapping[str, str], cwd: Path | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``otel-agent-replay ARGS`` in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "otel_agent_replay.cli", *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def cli() -> object:
    """``run_cli``: the command as a user runs it."""
    return run_cli


@pytest.fixture
def proxy_env(mitmdump: str, tmp_path: Path) -> dict[str, str]:
    """The environment a user runs the command in: mitmdump found, temporary files in a folder of the test's
    own (so what the proxy leaves behind can be seen)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_PROXY", "_proxy")) and "BASE_URL" not in k}
    env.update({"AGENT_REPLAY_MITMDUMP": mitmdump, "TMPDIR": str(temp), "PYTHONUNBUFFERED": "1"})
    return env
