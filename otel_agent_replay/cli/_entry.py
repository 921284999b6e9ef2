"""The ``otel-agent-replay`` command's entry point: it parses first, then imports what the command needs.

``main(argv) -> int`` is the whole command, so it is tested by calling it. Each command lives in a
module of its own (``COMMANDS``); the parser of a command is built from that module's
``register(sub)`` only, so ``show`` imports the tape loader and rich, not the evidence store or
the backends. ``--help`` and a missing or unknown command are answered from ``COMMANDS`` alone,
and ``--version`` from the top-level ``_version`` module: neither imports more than argparse, this
module and the package's (lazy) top level (see docs/design.md, "Import cost").
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

PROG = "otel-agent-replay"
DESCRIPTION = "Record AI agent runs as OpenTelemetry spans; look at the tapes."

COMMANDS: dict[str, tuple[str, str]] = {
    "show": ("_main", "print each run of a tape as a tree of steps"),
    "demo": ("_main", "record a four-step demo agent, then replay it: as recorded, with drift, a miss, an override"),
    "diff": ("_diff", "compare two runs (or tapes, run by run)"),
    "stats": ("_stats", "per tool: calls, error rate, latency, retries, side effects"),
    "check": ("_check", "check tapes: format, unredacted secrets, staleness, tool versions"),
    "push": (
        "_backends",
        "send a tape's spans to an OTLP endpoint (ids, parents, times kept): view it in Jaeger later",
    ),
    "pull": (
        "_backends",
        "fetch traces from Jaeger's query API into a tape replay accepts (redacted on the way in)",
    ),
    "ingest": ("_store", "load tapes into the evidence store (idempotent: a span ingested twice is one row)"),
    "report": (
        "_store",
        "metrics per agent version from the evidence store, per case the pass rates of repeated runs, and a "
        "comparison of two versions with a verdict per case",
    ),
    "golden": (
        "_store",
        "write a regression set: stored sessions sampled per tag (failures, edge cases, successes) as tapes",
    ),
    "regress": (
        "_regression",
        "run a new agent version on recorded sessions offline (tools replayed, out-of-bounds calls "
        "answered and counted), judge and store it, and compare it with the previous version",
    ),
    "conform": ("_conform", "call each read-only tool once, live, and compare its answer's shape with the tape's"),
    "fork": (
        "_fork",
        "replay a recording with a step edited (or code changed) and go live where it leaves the recording",
    ),
    "record": (
        "_proxy",
        "run a command (any language) with its HTTP and HTTPS recorded to a tape through a local proxy",
    ),
    "replay": ("_proxy", "run a command (any language) sealed: its HTTP and HTTPS answered from the tape, or refused"),
}
"""Each command, in the order ``--help`` lists them: the module that registers it, and its one-line help
(the same text the module gives its subparser; a test checks they agree)."""


class _Version(argparse.Action):
    """``--version``: the version is imported when asked for, not to build the parser."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        _print_version()
        parser.exit()


def _print_version() -> None:
    from otel_agent_replay._version import __version__

    print(f"{PROG} {__version__}")


def _top() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    return parser, parser.add_subparsers(dest="command", required=True)


def _front_parser() -> argparse.ArgumentParser:
    """The command's parser with every command named and none of their arguments (which need imports)."""
    parser, sub = _top()
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False).add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def build_parser(*commands: str) -> argparse.ArgumentParser:
    """The argument parser of the given commands (default: the whole command), from their modules."""
    parser, sub = _top()
    modules = [COMMANDS[c][0] for c in commands] if commands else [m for m, _ in COMMANDS.values()]
    for module in dict.fromkeys(modules):
        importlib.import_module(f"{__package__}.{module}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["--version"]:  # argparse would answer it first: no parser needed
        _print_version()
        raise SystemExit(0)
    command = words[0] if words else None
    if command not in COMMANDS:
        # --help, --version, no command or an unknown one: answered (and exited) without importing a command
        command = _front_parser().parse_args(words).command
    args = build_parser(command).parse_args(words)

    from rich.markup import escape

    from otel_agent_replay.core import AgentReplayError

    from ._output import PipeConsole

    # Into a pipe or a file, lines are not wrapped: what is printed stays greppable.
    # (and not cropped at 80 columns: a tree label keeps its tokens and cost at the end of the line)
    out = PipeConsole(highlight=False, soft_wrap=not sys.stdout.isatty(), width=None if sys.stdout.isatty() else _WIDE)
    err = PipeConsole(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
    try:
        return int(args.handler(args, out, err))
    except AgentReplayError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        return 2
    except BrokenPipeError:
        return _reader_went_away()


_WIDE = 4000

BROKEN_PIPE = 141
"""Exit status when the reader of our output went away (``show --json | head``): 128 + SIGPIPE, as a shell reports."""


def _reader_went_away() -> int:
    """The pipe we wrote to was closed: stop quietly, and keep Python's exit-time flush from complaining."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
