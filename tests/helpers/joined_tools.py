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


def outside(url: str) -> dict[str, Any]:
    """What a worker started after a block sees: the variables a block would have set, whether it joined one,
    and the answer of a live GET to ``url``."""
    import urllib.request

    from otel_agent_replay.instrumentation import current_replay

    names = ("AGENT_REPLAY_JOIN", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
    with urllib.request.urlopen(f"{url}/items?q=after", timeout=30) as answer:
        status = answer.status
    return {
        "set": sorted(n for n in names if n in os.environ) + [p for p in sys.path if "agent-replay-join" in p],
        "joined": current_replay.get() is not None,
        "status": status,
    }


def process_main(folder: str, name: str, out: str) -> None:
    """A ``multiprocessing.Process`` target: ``worker``'s answer written to ``out``."""
    Path(out).write_text(json.dumps(worker(folder, name)), encoding="utf-8")


if __name__ == "__main__":  # python -m helpers.joined_tools FOLDER NAME: one worker, its answer printed
    print(json.dumps(worker(sys.argv[1], sys.argv[2])), flush=True)
