"""The evidence store commands: ``ingest`` tapes, ``report`` metrics by version, ``golden`` a regression set.

Exit status: 0 done; 1 (``report``) a metric regressed past a ``--threshold``, or a case got a verdict
named by ``--fail-on``; 2 a usage, option or tape error (nothing was written); 3 the store could not
be opened, read or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.core import ConfigurationError, StoreError, visible
from otel_agent_replay.store import CaseVerdict, Store, VerdictRule, format_report, golden, open_store, report_rows

from ._cost import model_price
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


def fail_on_verdicts(specs: list[str] | None) -> tuple[CaseVerdict, ...]:
    """``--fail-on regressed --fail-on flaky`` or ``--fail-on regressed,flaky`` as verdicts."""
    out: list[CaseVerdict] = []
    for spec in specs or ():
        for name in spec.split(","):
            name = name.strip().lower()
            try:
                out.append(CaseVerdict(name))
            except ValueError:
                known = ", ".join(v.value for v in CaseVerdict)
                raise ConfigurationError(f"--fail-on {name!r}: name verdicts among {known}") from None
    return tuple(dict.fromkeys(out))


def verdict_rule(args: argparse.Namespace) -> VerdictRule:
    """The verdict options of ``report`` and ``regress``."""
    return VerdictRule(alpha=args.alpha, confidence=args.confidence, pass_k=args.pass_k, min_runs=args.min_runs)


def add_verdict_arguments(cmd: argparse.ArgumentParser) -> None:
    """``--fail-on`` and the numbers behind per-case verdicts."""
    cmd.add_argument(
        "--fail-on",
        action="append",
        metavar="VERDICT",
        help="exit 1 when a case gets this verdict between --compare's versions: regressed (the CI gate), error "
        "(a judge could not judge), fixed, flaky, fail, pass, unknown; repeatable or comma-separated",
    )
    cmd.add_argument("--alpha", type=float, default=0.05, help="level of Fisher's exact test per case (0.05)")
    cmd.add_argument("--confidence", type=float, default=0.95, help="of the Wilson interval of a pass rate (0.95)")
    cmd.add_argument("--pass-k", type=int, default=5, metavar="K", help="the k of pass^k: k runs all pass (5)")
    cmd.add_argument("--min-runs", type=int, default=5, metavar="N", help="fewer runs of a case is unknown (5)")


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
    fail_on: tuple[CaseVerdict, ...] = (),
    rule: VerdictRule | None = None,
    err: Console | None = None,
    out_path: str | None = None,
) -> int:
    """Print the report (``format_report``); 1 when a metric regressed past its threshold or a case got a
    verdict of ``fail_on``, else 0."""
    report = report_rows(
        store,
        by=cast(Any, by),
        compare=compare,
        thresholds=thresholds or None,
        tag=tag,
        criteria_version=criteria_version,
        cases=True if fail_on else None,
        rule=rule,
        price=model_price,
    )
    # as is: Markdown for a PR comment, CSV, JSON; or one HTML page (imported only for it)
    if fmt == "html":
        from otel_agent_replay.pages import report_page

        text = report_page(report)
    else:
        text = format_report(report, cast(Any, fmt))
        if fmt != "json":  # text for a person: no control or bidirectional character from the data acts
            text = visible(text)
    if out_path:
        Path(out_path).write_text(text, encoding="utf-8")
        out.print(f"wrote {escape(out_path)}")
        said = report.headline()
        if said is not None:
            out.print(escape(said))
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    failing = report.failing(fail_on)
    unjudged = report.failing((CaseVerdict.ERROR,))
    if unjudged and CaseVerdict.ERROR not in fail_on and err is not None:
        err.print(
            f"[yellow]warning:[/yellow] {len(unjudged)} case(s) could not be judged (verdict error: a judge raised "
            "or gave no verdict); gate on them with --fail-on error"
        )
    if failing and err is not None:
        names = ", ".join(v.value for v in fail_on)
        err.print(f"[red]--fail-on {escape(names)}:[/red] {len(failing)} case(s): {escape(', '.join(failing))}")
    return EXIT_REGRESSED if report.regressed or failing else 0


def _cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.threshold and not args.compare:
        err.print("[red]error:[/red] --threshold applies to a comparison: give --compare BASELINE CANDIDATE too")
        return 2
    if args.fail_on and not args.compare:
        err.print(
            "[red]error:[/red] --fail-on gates on verdicts between two versions: give --compare BASELINE CANDIDATE"
        )
        return 2
    fail_on = fail_on_verdicts(args.fail_on)
    rule = verdict_rule(args)
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
            fail_on=fail_on,
            rule=rule,
            err=err,
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
        help="metrics per agent version from the evidence store, per case the pass rates of repeated runs, and a "
        "comparison of two versions with a verdict per case",
        epilog=STORE_EPILOG.format(one="1 a metric regressed past a --threshold, or a case got a --fail-on verdict; "),
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
    add_verdict_arguments(report)
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
