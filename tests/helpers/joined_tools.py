"""Tools called in processes started from a ``record()``/``replay()`` block (importable by a spawned child):
a read-only lookup whose every live answer is new, and a write tool that leaves a marker file."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from otel_agent_replay import tool


@tool(side_effect="read_only")
def lookup(key: str) -> dict[str, Any]:
    """A live answer is never given twice (a nonce): one that comes back again came from the tape."""
    return {"key": key, "pid": os.getpid(), "nonce": uuid.uuid4().hex}


@tool(side_effect="write")
def write_marker(folder: str, name: str) -> str:
    """A real side effect: a file named ``name`` in ``folder``."""
    (Path(folder) / name).write_text("written by a child\n", encoding="utf-8")
    return "written"


def worker(folder: str, name: str) -> dict[str, Any]:
    """What a child process does: look up, then write; a refusal is reported, not raised."""
    found = lookup(name)
    try:
        wrote = write_marker(folder, name)
    except Exception as exc:
        wrote = type(exc).__name__
    return {"lookup": found, "write": wrote, "pid": os.getpid()}


def process_main(folder: str, name: str, out: str) -> None:
    """A ``multiprocessing.Process`` target: ``worker``'s answer written to ``out``."""
    Path(out).write_text(json.dumps(worker(folder, name)), encoding="utf-8")


if __name__ == "__main__":  # python -m helpers.joined_tools FOLDER NAME: one worker, its answer printed
    print(json.dumps(worker(sys.argv[1], sys.argv[2])), flush=True)
