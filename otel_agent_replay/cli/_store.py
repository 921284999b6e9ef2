"""The evidence store commands: ``ingest`` tapes, ``report`` metrics by version, ``golden`` a regression set.

Exit status: 0 done; 1 (``report``) a metric regressed past a ``--threshold``; 2 a usage, option or
tape error (nothing was written); 3 the store could not be opened, read or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.core import StoreError
from otel_agent_replay.pages import report_page
from otel_agent_replay.store import Store, format_report, golden, open_store, report_rows

from ._output import dump_json

EXIT_REGRESSED = 1
EXIT_STORE = 3
DB_HELP = "the evidence store: a SQLite file (created when missing) or a postgresql://user@host/dbname URL"
STORE_EPILOG = (
    "exit status: 0 done; {one}2 a usage, option or tape error; 3 the evidence store could not be opened, "
    "read or written."
)


def with_store(args: argparse.Namespace, err: Console, work: Callable[[Store], int]) -> int:
    """Open ``args.db``, run ``work`` on it, close it; a ``StoreError`` is printed and exits 3."""
    try:
        with open_store(args.db) as store:
            return work(store)
    except StoreError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        return EXIT_STORE


def _cmd_ingest(args: argparse.Namespace, out: Console, err: Console) -> int:
    def work(store: Store) -> int:
        results = [store.ingest(path, tags=args.tag or ()) for path in args.tapes]
        if args.json:
            dump_json(
                [
                    {
                        "tape": r.source,
                        "sessions": r.sessions,
                        "spans": r.spans,
                        "messages": r.messages,
                        "tool_calls": r.tool_calls,
                        "warnings": list(r.warnings),
                    }
                    for r in results
                ]
            )
            return 0
        for r in results:
            out.print(
                f"ingested {escape(r.source)}: {r.sessions} session(s), {r.spans} span(s), {r.messages} message(s), "
                f"{r.tool_calls} tool call(s)"
            )
            for warning in r.warnings:
                err.print(f"[yellow]warning:[/yellow] {escape(warning)}")
        out.print(f"into {escape(store.location)}; see it with: otel-agent-replay report --db {escape(args.db)}")
        return 0

    return with_store(args, err, work)


def print_report(
    store: Store,
    out: Console,
    *,
    by: str = "agent_version",
    compare: tuple[str, str] | None = None,
    thresholds: list[str] | None = None,
    fmt: str = "md",
    tag: str | None = None,
    criteria_version: str | None = None,
    out_path: str | None = None,
) -> int:
    """Print the report (``format_report``); 1 when a metric regressed past its threshold, else 0."""
    report = report_rows(
        store,
        by=cast(Any, by),
        compare=compare,
        thresholds=thresholds or None,
        tag=tag,
        criteria_version=criteria_version,
    )
    # as is: Markdown for a PR comment, CSV, JSON; or one HTML page
    text = report_page(report) if fmt == "html" else format_report(report, cast(Any, fmt))
    if out_path:
        Path(out_path).write_text(text, encoding="utf-8")
        out.print(f"wrote {escape(out_path)}")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_REGRESSED if report.regressed else 0


def _cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.threshold and not args.compare:
        err.print("[red]error:[/red] --threshold applies to a comparison: give --compare BASELINE CANDIDATE too")
        return 2
    fmt = "json" if args.json else args.format

    def work(store: Store) -> int:
        return print_report(
            store,
            out,
            by=args.by,
            compare=tuple(args.compare) if args.compare else None,
            thresholds=args.threshold,
            fmt=fmt,
            tag=args.tag,
            criteria_version=args.criteria_version,
            out_path=args.out,
        )

    return with_store(args, err, work)


def _cmd_golden(args: argparse.Namespace, out: Console, err: Console) -> int:
    def work(store: Store) -> int:
        tapes = golden(store, tag=args.tag, per_tag=args.per_tag, out_dir=args.out)
        if args.json:
            dump_json(
                [
                    {
                        "path": str(t.path),
                        "session_id": t.session_id,
                        "tag": t.tag,
                        "stratum": t.stratum,
                        "agent_name": t.agent_name,
                        "agent_version": t.agent_version,
                    }
                    for t in tapes
                ]
            )
            return 0
        for t in tapes:
            out.print(f"{escape(t.tag)}  {t.stratum:<8} {escape(t.session_id)}  → {escape(str(t.path))}")
        out.print(
            f"{len(tapes)} tape(s) in {escape(args.out)}; run a new version on them with: otel-agent-replay regress "
            f"{escape(args.out)} --agent module:function --agent-version V --db {escape(args.db)}"
        )
        return 0

    return with_store(args, err, work)


def register(sub: Any) -> None:
    """Add ``ingest``, ``report`` and ``golden`` to the command's subparsers."""
    ingest = sub.add_parser(
        "ingest",
        help="load tapes into the evidence store (idempotent: a span ingested twice is one row)",
        epilog=STORE_EPILOG.format(one=""),
    )
    ingest.add_argument("tapes", nargs="+", metavar="TAPE", help="tapes: OTLP JSON Lines, OTLP JSON or Jaeger JSON")
    ingest.add_argument("--db", required=True, metavar="PATH_OR_URL", help=DB_HELP)
    ingest.add_argument("--tag", action="append", metavar="TAG", help="a tag for every session (repeatable)")
    ingest.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    ingest.set_defaults(handler=_cmd_ingest)

    report = sub.add_parser(
        "report",
        help="metrics per agent version from the evidence store, and a comparison of two versions",
        epilog=STORE_EPILOG.format(one="1 a metric regressed past a --threshold; "),
    )
    report.add_argument("--db", required=True, metavar="PATH_OR_URL", help=DB_HELP)
    report.add_argument(
        "--by", choices=("agent_version", "agent_name", "task"), default="agent_version", help="one row per …"
    )
    report.add_argument(
        "--compare", nargs=2, metavar=("BASELINE", "CANDIDATE"), help="deltas of CANDIDATE against BASELINE"
    )
    report.add_argument(
        "--threshold",
        action="append",
        metavar="METRIC=DELTA",
        help="how much a metric may worsen before the command exits 1: pass_rate=0.05 (an amount) or "
        "latency_ms_avg=10%% (of the baseline); repeatable",
    )
    report.add_argument("--tag", metavar="TAG", help="count only the sessions with this tag")
    report.add_argument("--criteria-version", metavar="X", help="pass_rate from the evaluations of these criteria only")
    report.add_argument(
        "--format",
        choices=("md", "csv", "json", "html"),
        default="md",
        help="md (default: a PR comment), csv, json, or html (one self-contained page with charts)",
    )
    report.add_argument("-o", "--out", metavar="FILE", help="write the report to FILE instead of stdout")
    report.add_argument("--json", action="store_true", help="the same as --format json")
    report.set_defaults(handler=_cmd_report)

    gold = sub.add_parser(
        "golden",
        help="write a regression set: stored sessions sampled per tag (failures, edge cases, successes) as tapes",
        epilog=STORE_EPILOG.format(one=""),
    )
    gold.add_argument("--db", required=True, metavar="PATH_OR_URL", help=DB_HELP)
    gold.add_argument("--tag", required=True, action="append", metavar="TAG", help="a tag to sample (repeatable)")
    gold.add_argument("--per-tag", type=int, default=10, metavar="N", help="tapes per tag (default 10)")
    gold.add_argument("--out", required=True, metavar="DIR", help="the folder to write the tapes to")
    gold.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    gold.set_defaults(handler=_cmd_golden)
