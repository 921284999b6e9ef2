"""``conform TAPE… --tools module[:attr]``: call each read-only tool once, live, and compare its
result's shape with the fixtures'."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.replayer import CHANGED, ERROR, OK, REFUSED, conform, load_tools

from ._output import dump_json

CONFORM_EPILOG = (
    "Importing the module named by --tools is your explicit choice: it is your code. Only tools that "
    "declare side_effect='read_only' (and are not recorded otherwise) are called, under the replay's side-effect "
    "gate: a tool that is not read-only called from inside one is refused and reported; tape data never names "
    "a module or a function. exit status: 0 every tool called answered in the recorded shape, 1 a finding "
    "(missing key, new key, type change, error status, refused side effect), 2 a usage or tape error."
)


def _cmd_conform(args: argparse.Namespace, out: Console, err: Console) -> int:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's project, as `python -m` would see it
    tools: dict[str, Any] = {}
    for target in args.tools:
        tools.update(load_tools(target))
    result = conform(list(args.tapes), tools)
    status = 0 if result.ok else 1
    if args.json:
        dump_json(result.to_json())
        return status
    colour = {OK: "green", CHANGED: "red", ERROR: "red", REFUSED: "red"}
    for tool in result.tools:
        c = colour.get(tool.status, "yellow")
        reason = f" ({escape(tool.reason)})" if tool.reason and tool.status != ERROR else ""
        out.print(f"[{c}]{tool.status}[/{c}] {escape(tool.tool)}{reason}")
        for finding in tool.findings:
            out.print(f"    {escape(finding)}")
    called = sum(t.status != "skipped" for t in result.tools)
    out.print(f"{called} tool(s) called live, {len(result.tools) - called} skipped")
    return status


def register(sub: Any) -> None:
    """Add ``conform`` to the command's subparsers."""
    cmd = sub.add_parser(
        "conform",
        help="call each read-only tool once, live, and compare its answer's shape with the tape's",
        epilog=CONFORM_EPILOG,
    )
    cmd.add_argument("tapes", nargs="+", help="one or more tapes")
    cmd.add_argument(
        "--tools",
        action="append",
        required=True,
        metavar="MODULE[:ATTR]",
        help="where your @tool functions are: a module, or a mapping, list or object in it (repeatable)",
    )
    cmd.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    cmd.set_defaults(handler=_cmd_conform)
