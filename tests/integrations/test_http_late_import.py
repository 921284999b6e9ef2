"""Capture points whatever the import order: an agent whose HTTP client (httpx, requests over urllib3,
aiohttp, botocore) is first imported inside the block, in the block's thread or in a thread given its
context after the block began, records its requests as steps, and its replay, in a fresh process,
answers them from the tape: the server sees nothing. A block itself imports no client library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.bedrock_server import bedrock_server
from helpers.rest_server import rest_api

from otel_agent_replay import load_tape

AGENT = Path(__file__).parent / "late_http_agent.py"
TESTS = Path(__file__).parent.parent


def _run(mode: str, tape: Path, url: str, lib: str, where: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(AGENT), mode, str(tape), url, lib, where],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])},
    )
    assert done.returncode == 0, done.stderr
    assert "could not put its capture point" not in done.stderr, done.stderr  # every capture point went in
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@contextmanager
def _server(lib: str) -> Iterator[tuple[str, Any]]:
    """The server's URL and a count of the requests it received."""
    if lib == "botocore":
        with bedrock_server() as bedrock:
            yield bedrock.url, lambda: len(bedrock.requests)
    else:
        with rest_api() as api:
            yield api.url, lambda: len(api.requests)


CASES = [
    ("httpx", "block"),
    ("httpx", "thread"),
    ("requests", "block"),
    ("requests", "thread"),
    ("aiohttp", "block"),
    ("botocore", "block"),
]


@pytest.mark.parametrize(("lib", "where"), CASES, ids=[f"{lib}-{where}" for lib, where in CASES])
def test_a_client_imported_inside_the_block_is_captured(tape: Path, lib: str, where: str) -> None:
    with _server(lib) as (url, received):
        recorded = _run("record", tape, url, lib, where)
        # the agent's import is the first: not before the block, and the block itself imported nothing
        assert recorded["imported_before"] == recorded["imported_in_block"] == []
        live = received()
        assert live == len(recorded["seen"])
        steps = [step for run in load_tape(tape).runs for step in run.steps]
        assert len(steps) == live  # each request a step

        replayed = _run("replay", tape, url, lib, where)
        assert replayed["imported_before"] == replayed["imported_in_block"] == []
        assert "error" not in replayed, replayed["error"]
        assert replayed["seen"] == recorded["seen"]
        assert received() == live  # not one request reached the server
    stats = replayed["stats"]
    assert stats["hits"] == live and stats["misses"] == 0 and stats["unused"] == 0
    assert stats["stubbed_side_effects"] == (0 if lib == "botocore" else 1)  # the POST: its recorded answer
    assert stats["loopback_connections"] == 0 and stats["blocked_connections"] == 0
