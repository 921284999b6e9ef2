"""``diff`` two runs, or two tapes run by run: the causes of a change first, their consequences folded."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.comparison import STRICT, Policy, compare, short
from otel_agent_replay.core import visible
from otel_agent_replay.tape import load_tape

from ._output import dump_json


def _policy(args: argparse.Namespace) -> Policy:
    base = STRICT if args.strict else Policy()
    unordered: dict[str, str | None] = {}
    for spec in args.unordered or ():
        pattern, _, key = spec.partition("=")
        unordered[pattern] = key or None
    return Policy(ignore=base.ignore + tuple(args.ignore or ()), unordered=unordered)


def _cmd_diff(args: argparse.Namespace, out: Console, err: Console) -> int:
    # tapes another tool wrote may hold secrets: read them through the redactor capture uses
    left, right = load_tape(args.a, redactor=DEFAULT_REDACTOR), load_tape(args.b, redactor=DEFAULT_REDACTOR)
    result = compare(left, right, _policy(args))
    if args.html:
        from otel_agent_replay.pages import diff_page  # only when asked: the pages bring the store's report

        page = diff_page(result, left.runs, right.runs)
        Path(args.html).write_text(page, encoding="utf-8")
        err.print(f"wrote {escape(args.html)}")
    if args.json:
        dump_json(result.to_json())
        return 0 if result.same else 1
    for fork in result.forks:
        out.print(f"[cyan]{escape(visible(str(fork), newlines=False))}[/cyan]")
    if result.same:
        out.print(f"[green]same[/green]: {escape(result.left)} and {escape(result.right)} do not diverge")
        return 0
    out.print(
        f"[bold]{escape(result.left)}[/bold] → [bold]{escape(result.right)}[/bold]: [red]{result.headline()}[/red]"
    )
    for i, cause in enumerate(result.causes):
        mark = "[bold red]first cause[/bold red]" if i == 0 else "[bold]cause[/bold]"
        where = f" {escape(cause.step)}" if cause.step else ""
        out.print(f"  {mark} [yellow]{escape(cause.origin.value)}[/yellow]{where}")
        for d in cause.differences:
            out.print(f"      {escape(d.kind.value)} {escape(d.path)}")
            out.print(f"      [red]- {escape(short(d.left, 160))}[/red]")
            out.print(f"      [green]+ {escape(short(d.right, 160))}[/green]")
        if cause.consequences:
            out.print(f"    [dim]{cause.count} consequence(s):[/dim]")
        for c in cause.consequences:
            d = c.difference
            out.print(
                f"      [dim]{escape(c.carried.value):>6}[/dim] {escape(d.kind.value)} {escape(d.step)} "
                f"{escape(d.path)}: {escape(short(d.left, 60))} → {escape(short(d.right, 60))}"
            )
    return 1


def register(sub: Any) -> None:
    """Add ``diff`` to the command's subparsers."""
    diff = sub.add_parser(
        "diff",
        help="compare two runs (or tapes, run by run)",
        epilog="exit status: 0 same, 1 the runs diverge (like diff(1)), 2 a tape could not be read",
    )
    diff.add_argument("a", help="the reference tape (e.g. the recording)")
    diff.add_argument("b", help="the tape to compare (e.g. the replay or a new version)")
    diff.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    diff.add_argument(
        "--ignore",
        action="append",
        metavar="PATTERN",
        help="also ignore this path pattern, e.g. 'result.*.updated' or 'search:result' (repeatable)",
    )
    diff.add_argument(
        "--unordered",
        action="append",
        metavar="PATTERN[=KEY]",
        help="compare lists at this path without regard to order, keyed by KEY (repeatable)",
    )
    diff.add_argument("--strict", action="store_true", help="do not ignore timestamps, request ids and token counts")
    diff.add_argument(
        "--html", metavar="FILE", help="also write the two tapes side by side, differences marked, as one HTML page"
    )
    diff.set_defaults(handler=_cmd_diff)


__all__ = ["register"]
