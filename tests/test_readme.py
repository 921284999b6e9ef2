"""Every shell command in the README runs as printed, from a fresh clone.

The README's shell blocks are run in order in a copy of the repository's tracked files (a fresh
clone of the working tree: no `.venv`, no tapes); blocks tagged `in-your-project` run in a new
project folder beside it, as the README says. A block's info string says what it needs beyond
that (`needs-server`, `needs-your-agent`, `whole-suite`); those are the only blocks not run. A
command's expected exit status is 0 unless its comment says `# exit N`. This test creates two
virtual environments and installs the SDK into both (from PyPI's cache when warm): minutes, not
seconds, and the only way to know that the commands work for a new user.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = {"needs-server", "needs-your-agent", "whole-suite", "own-test"}
"""Blocks this test leaves to others: ``own-test`` ones run in a test of their own (the evidence
story: tests/regression/test_readme_story.py, with the venv's commands on PATH as the README says)."""
PLACES = {"in-your-project"}
_FENCE = re.compile(r"^```(\S*)(.*)$")
_EXIT = re.compile(r"#\s*exit (\d+)")


@dataclass(frozen=True)
class Block:
    line: int
    tags: frozenset[str]
    commands: tuple[tuple[int, str], ...]


def shell_blocks(text: str) -> list[Block]:
    """The README's ``bash`` blocks: their line, tags and commands (continuation lines joined)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None or not match.group(1):
            i += 1
            continue
        language, tags, start = match.group(1), frozenset(match.group(2).split()), i + 1
        body: list[str] = []
        i += 1
        while not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if language not in ("bash", "sh"):
            continue
        commands: list[tuple[int, str]] = []
        pending = ""
        for offset, raw in enumerate(body, start=start + 1):
            pending += raw.rstrip("\\") + (" " if raw.endswith("\\") else "")
            if raw.endswith("\\"):
                continue
            if pending.strip() and not pending.lstrip().startswith("#"):
                commands.append((offset, pending.strip()))
            pending = ""
        blocks.append(Block(start, tags, tuple(commands)))
    return blocks


def _expected_status(command: str) -> int:
    found = _EXIT.search(command)
    return int(found.group(1)) if found else 0


def test_every_shell_block_is_run_or_says_what_it_needs() -> None:
    blocks = shell_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    for block in blocks:
        unknown = block.tags - NOT_RUN - PLACES
        assert not unknown, f"README.md:{block.line}: unknown tags {sorted(unknown)}"
        assert block.commands, f"README.md:{block.line}: an empty shell block"


def _fresh_clone(target: Path) -> None:
    """The tracked files of the working tree, as a clone would have them (without git's history)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if not source.is_file():
            continue  # deleted in the working tree
        destination = target / os.fsdecode(name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)


def test_the_readme_commands_run_as_printed(tmp_path: Path) -> None:
    clone, project = tmp_path / "otel-agent-replay", tmp_path / "my-project"
    _fresh_clone(clone)
    project.mkdir()
    # A new user has none of the suite's settings (CI points AGENT_REPLAY_VENV at its own venv, for one).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not k.startswith("AGENT_REPLAY_")
    }
    # The test's own environment is not on PATH: a command that forgets `.venv/bin/` fails here as it would for a user.
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    ran = 0
    for block in shell_blocks((clone / "README.md").read_text(encoding="utf-8")):
        if block.tags & NOT_RUN:
            continue
        cwd = project if "in-your-project" in block.tags else clone
        # Each command runs after the block's `cd`s before it, in one shell per command, so its exit is its own.
        prefix: list[str] = []
        for line, command in block.commands:
            if command.startswith("cd "):
                prefix.append(command)
                continue
            done = subprocess.run(
                ["bash", "-c", " && ".join([*prefix, command]) if prefix else command],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            expected = _expected_status(command)
            assert done.returncode == expected, (
                f"README.md:{line}: `{command}` exited {done.returncode}, expected {expected}\n"
                f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
            )
            assert "Traceback" not in done.stderr and "DeprecationWarning" not in done.stderr, (
                f"README.md:{line}: `{command}`\n{done.stderr[-3000:]}"
            )
            ran += 1
    assert ran >= 12
    assert (project / ".venv" / "bin" / "otel-agent-replay").exists()
    assert sorted(p.name.split("-")[0] for p in (clone / "dist").glob("*.whl")) == [
        "opentelemetry_exporter_agent_replay_tape",
        "otel_agent_replay",
    ]
