"""What the commands write to standard output: indented JSON for machines, and the console for people."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from otel_agent_replay.core import CONTROL_CHARACTERS, visible


class PipeConsole(Console):
    """A rich ``Console`` for the commands' human output.

    Every piece of text it renders has its control characters shown as escapes (``core.visible``):
    tape data (tool and agent names, arguments, results, exception messages) never reaches the
    terminal as an escape sequence, whichever command prints it and however (a string, a tree, a
    table). The console's own styling is added after, so colours still work. A closed pipe ends
    the command the way ``main`` ends it for JSON (quietly, with 141) instead of rich's own
    ``SystemExit(1)``.
    """

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and CONTROL_CHARACTERS.search(segment.text):
                yield Segment(visible(segment.text), segment.style)
            else:
                yield segment

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def dump_json(data: Any) -> None:
    """Write ``data`` as indented JSON and a newline to standard output (exact: nothing is escaped but JSON's own)."""
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


_PROGRESS_TAPES = 4
_PROGRESS_BYTES = 20 * 1024 * 1024


def with_progress(paths: list[str], err: Console) -> Iterator[str]:
    """Yield the paths, showing a progress bar on a terminal when there are many or large tapes."""
    sizes = [Path(p).stat().st_size if Path(p).exists() else 0 for p in paths]
    if err.is_terminal and (len(paths) >= _PROGRESS_TAPES or sum(sizes) >= _PROGRESS_BYTES):
        from rich.progress import Progress  # only on a terminal with much to read

        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("reading tapes", total=sum(sizes) or len(paths))
            for path, size in zip(paths, sizes, strict=True):
                yield path
                progress.advance(task, size or 1)
        return
    yield from paths
