"""What the commands write to standard output: indented JSON for machines, and the console for people."""

from __future__ import annotations

import sys
from typing import Any

import orjson
from rich.console import Console


class PipeConsole(Console):
    """A rich ``Console`` that lets a closed pipe end the command the way ``main`` ends it for JSON
    (quietly, with 141) instead of rich's own ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def dump_json(data: Any) -> None:
    """Write ``data`` as indented JSON and a newline to standard output."""
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()
