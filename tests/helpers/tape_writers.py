"""Processes that write one tape at the same time (the one-writer lock's tests run this file).

``once TAPE MARKERS GATE``: ``replay(TAPE, mode="once")`` of an agent with two read-only lookups; each
lookup that really runs appends this process's pid to MARKERS, and the first one waits until GATE
exists (an empty GATE: no wait). Prints one JSON line: whether it recorded, and the results.

``strict TAPE MARKERS``: the same agent under a strict replay (``mode="none"``).

``append TAPE WHO N``: N replays in ``mode="new_episodes"``, each calling the recorded lookup and one
new read-only tool of its own (a miss, run live and appended to the recorded run).

``hold TAPE``: ``record(TAPE)`` that prints ``holding`` and then sleeps (to be killed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from otel_agent_replay import agent_run, record, replay, tool


def _agent(markers: str, gate: str) -> list[str]:
    @tool(side_effect="read_only")
    def lookup(q: str) -> str:
        with open(markers, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        deadline = time.monotonic() + 120
        while gate and q == "a" and not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.01)
        return q.upper()

    with agent_run("agent", input="q"):
        return [lookup("a"), lookup("b")]


def main(argv: list[str]) -> None:
    command, tape = argv[0], argv[1]
    if command == "once":
        with replay(tape, mode="once", lock_timeout=120) as session:
            out = _agent(argv[2], argv[3])
        print(json.dumps({"recorded": session.recording, "out": out}), flush=True)
    elif command == "strict":
        with replay(tape) as session:
            out = _agent(argv[2], "")
        print(json.dumps({"recorded": session.recording, "out": out}), flush=True)
    elif command == "append":
        who, n = argv[2], int(argv[3])

        @tool(side_effect="read_only")
        def lookup(q: str) -> str:
            return q.upper()

        for i in range(n):
            probe = tool(side_effect="read_only", name=f"probe_{who}_{i}")(lambda i=i: f"{who}-{i}")
            with replay(tape, mode="new_episodes", allow_unused=True, lock_timeout=120), agent_run("agent", input="q"):
                lookup("a")
                probe()
    elif command == "hold":
        with record(tape), agent_run("holder"):
            print("holding", flush=True)
            time.sleep(600)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main(sys.argv[1:])
