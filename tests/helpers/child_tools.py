"""A write tool for the tests of processes started during a replay (importable by a spawned child)."""

from __future__ import annotations

import sys
from pathlib import Path

from otel_agent_replay import tool


@tool(side_effect="write")
def append_note(path: str, text: str) -> str:
    """Append a line to a file: a real side effect."""
    with Path(path).open("a", encoding="utf-8") as file:
        file.write(text + "\n")
    return "written"


def main() -> None:
    """``python -m helpers.child_tools PATH TEXT``: the tool called in a child process."""
    append_note(sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
