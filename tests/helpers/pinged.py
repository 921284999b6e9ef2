"""One read-only ``ping`` tool and a tape of one run that calls it: for the replay tests that need a replay
running (its guard, its context) and nothing more from the tape."""

from __future__ import annotations

from pathlib import Path

from otel_agent_replay import agent_run, record, tool


@tool(side_effect="read_only")
def ping() -> str:
    return "pong"


def ping_tape(tape: Path) -> Path:
    """Record ``tape``: one run of agent ``a`` that pings once."""
    with record(tape), agent_run("a"):
        ping()
    return tape
