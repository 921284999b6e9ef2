"""``regress``: run a new agent version on a golden set offline, judge it, store it, compare it with the last.

``--agent module:function`` and ``--evaluator module:function`` are imported because the user
named them on the command line (the current folder is importable, as with ``python -m``); tape
data never names anything to import. ``--evaluator tool_success`` and ``no_out_of_bounds`` are
the built-in rules by name. ``--rescore`` judges stored sessions again under
``--criteria-version`` without running any agent.

``--repeat K`` runs each case K times (``--models live``: the model again, the tools replayed);
``--workers N`` runs them in N processes, ``--shard I/N`` only the I-th of N slices of the cases
(one machine of a CI matrix; ``report`` reads the union of the shards from one store).

Exit status: 0 done; 1 a metric regressed past a ``--threshold``, or a case got a verdict named by
``--fail-on``; 2 a usage, option, import or tape error; 3 the evidence store could not be opened,
read or written.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.comparison import RunView
from otel_agent_replay.core import ConfigurationError, visible
from otel_agent_replay.regression import Evaluator, no_out_of_bounds, regress, rescore, tool_success
from otel_agent_replay.store import CaseVerdict, Evaluation, Store, report_rows

from ._output import dump_json
from ._regress_output import print_cases, result_json
from ._store import (
    DB_HELP,
    STORE_EPILOG,
    add_verdict_arguments,
    fail_on_verdicts,
    print_report,
    verdict_rule,
    with_store,
)

BUILT_IN: dict[str, Callable[[], Evaluator]] = {"tool_success": tool_success, "no_out_of_bounds": no_out_of_bounds}


def load_callable(spec: str, what: str) -> Callable[..., Any]:
    """``module:function`` (``module:object.attribute`` too) imported and checked callable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{what} {spec!r}: write module:function (e.g. myproject.agent:run)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's project, as python -m would see it
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"{what} {spec!r}: cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigurationError(f"{what} {spec!r}: {module_name!r} has no {attr!r}") from None
    if not callable(target):
        raise ConfigurationError(f"{what} {spec!r}: {attr!r} is a {type(target).__name__}, not a function")
    return target  # type: ignore[no-any-return]


_RESOLVED: dict[str, Any] = {}


def _resolve(spec: str) -> Any:
    if spec not in _RESOLVED:
        _RESOLVED[spec] = BUILT_IN[spec]() if spec in BUILT_IN else load_callable(spec, "--evaluator")
    return _RESOLVED[spec]


@dataclass(frozen=True)
class NamedEvaluator:
    """An evaluator named on the command line: pickled by its name, so ``--workers`` processes can take it."""

    spec: str

    def __call__(self, view: RunView) -> Evaluation | list[Evaluation]:
        return _resolve(self.spec)(view)  # type: ignore[no-any-return]

    @property
    def judge_model(self) -> str | None:
        judge = getattr(_resolve(self.spec), "judge_model", None)
        return judge if isinstance(judge, str) else None

    @property
    def __name__(self) -> str:
        return self.spec


def _evaluators(specs: list[str] | None) -> list[Evaluator]:
    out: list[Evaluator] = []
    for spec in specs or ():
        _resolve(spec)  # an evaluator that cannot be imported is an error now, before any run
        out.append(NamedEvaluator(spec))
    return out


def _cmd_regress(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.threshold and args.rescore:
        err.print("[red]error:[/red] --threshold goes with a regression run, not --rescore (use report --compare)")
        return 2
    evaluators = _evaluators(args.evaluator)
    if args.rescore:
        return _rescore(args, evaluators, out, err)
    if not args.agent or not args.agent_version:
        err.print("[red]error:[/red] regress needs --agent module:function and --agent-version V (or --rescore)")
        return 2
    if args.suite is None and args.tag is None:
        err.print(
            "[red]error:[/red] regress needs a SUITE folder of tapes (see golden), or --tag T for stored sessions"
        )
        return 2
    agent = load_callable(args.agent, "--agent")
    fail_on = fail_on_verdicts(args.fail_on)
    rule = verdict_rule(args)

    def work(store: Store) -> int:
        result = regress(
            args.suite,
            agent,
            agent_version=args.agent_version,
            # worker processes open the store themselves: give them what was given, not this connection
            store=args.db if args.workers > 1 else store,
            evaluators=evaluators,
            models=args.models,
            tag=args.tag,
            criteria_version=args.criteria_version,
            repeat=args.repeat,
            workers=args.workers,
            shard=args.shard,
            drift=args.drift,
        )
        baseline = args.baseline or result.baseline
        if args.json:
            dump_json(result_json(result, baseline))
        else:
            print_cases(result, out)
        if baseline is not None and args.baseline is None and not store.sessions(agent_version=baseline):
            if not args.json:  # the recorded runs' version, never stored (a suite recorded by hand)
                given = args.suite or "SUITE"
                suite = escape(visible(f"{given.rstrip('/')}/*.jsonl" if os.path.isdir(given) else given))
                out.print(
                    f"the recorded runs' version {escape(visible(baseline))} has no sessions in the store: nothing to "
                    f"compare with yet; to compare, ingest the recorded tapes (otel-agent-replay ingest {suite} "
                    f"--db {escape(visible(args.db))}) or give --baseline V"
                )
            baseline = None
        if baseline is None:
            if not args.json and args.baseline is None and result.baseline is None:
                out.print("no earlier version among the recorded sessions: nothing to compare with")
            if fail_on:
                err.print("[red]error:[/red] --fail-on needs a version to compare with: give --baseline V")
                return 2
            return 0
        if args.json:
            if not args.threshold and not fail_on:
                return 0
            return _regressed_quietly(store, args, (baseline, result.agent_version), fail_on)
        out.print("")
        return print_report(
            store,
            out,
            compare=(baseline, result.agent_version),
            thresholds=args.threshold,
            criteria_version=args.criteria_version,
            fail_on=fail_on,
            rule=rule,
            err=err,
        )

    return with_store(args, err, work)


def _regressed_quietly(
    store: Store, args: argparse.Namespace, compare: tuple[str, str], fail_on: tuple[CaseVerdict, ...]
) -> int:
    report = report_rows(
        store,
        compare=compare,
        thresholds=args.threshold,
        criteria_version=args.criteria_version,
        cases=True if fail_on else None,
        rule=verdict_rule(args),
    )
    return 1 if report.regressed or report.failing(fail_on) else 0


def _rescore(args: argparse.Namespace, evaluators: list[Evaluator], out: Console, err: Console) -> int:
    if not args.criteria_version:
        err.print("[red]error:[/red] --rescore needs --criteria-version X: the version of the new criteria")
        return 2
    if not evaluators:
        err.print("[red]error:[/red] --rescore needs at least one --evaluator")
        return 2
    if args.suite is not None or args.agent:
        err.print(
            "[red]error:[/red] --rescore runs no agent: give no SUITE or --agent; select sessions with --tag "
            "and --agent-version"
        )
        return 2

    def work(store: Store) -> int:
        rescored = rescore(
            store, evaluators, criteria_version=args.criteria_version, tag=args.tag, agent_version=args.agent_version
        )
        rows = sum(len(r.evaluations) for r in rescored)
        if args.json:
            dump_json(
                {
                    "criteria_version": args.criteria_version,
                    "sessions": len(rescored),
                    "eval_rows": rows,
                    "problems": [p for r in rescored for p in r.problems],
                }
            )
            return 0
        out.print(
            f"rescored {len(rescored)} stored session(s) under criteria {escape(args.criteria_version)}: "
            f"{rows} evaluation row(s) written, sessions untouched"
        )
        for problem in {p for r in rescored for p in r.problems}:
            err.print(f"[yellow]warning:[/yellow] {escape(problem)}")
        out.print(
            f"compare versions under these criteria with: otel-agent-replay report --db {escape(args.db)} "
            f"--criteria-version {escape(args.criteria_version)}"
        )
        return 0

    return with_store(args, err, work)


def register(sub: Any) -> None:
    """Add ``regress`` to the command's subparsers."""
    cmd = sub.add_parser(
        "regress",
        help="run a new agent version on recorded sessions offline (tools replayed, out-of-bounds calls "
        "answered and counted), judge and store it, and compare it with the previous version",
        epilog=STORE_EPILOG.format(one="1 a metric regressed past a --threshold, or a case got a --fail-on verdict; "),
    )
    cmd.add_argument("suite", nargs="?", metavar="SUITE", help="a folder of tapes (see golden), or one tape")
    cmd.add_argument("--agent", metavar="MODULE:FUNCTION", help="the agent to run (it starts its own agent_run)")
    cmd.add_argument("--agent-version", metavar="V", help="the version the new runs are stored under")
    cmd.add_argument("--db", required=True, metavar="PATH_OR_URL", help=DB_HELP)
    cmd.add_argument(
        "--tag",
        metavar="T",
        help="without SUITE: run on the stored sessions with this tag; with SUITE: a tag for the new sessions",
    )
    cmd.add_argument(
        "--evaluator",
        action="append",
        metavar="MODULE:FUNCTION",
        help="a callable judging a RunView (repeatable); built in: tool_success, no_out_of_bounds",
    )
    cmd.add_argument(
        "--models",
        choices=("tape", "live"),
        default=None,
        help="model calls from the tape (the default) or live (the default with --repeat above 1)",
    )
    cmd.add_argument("--criteria-version", metavar="X", help="stamped on the evaluations (and the report's pass rate)")
    cmd.add_argument(
        "--rescore",
        action="store_true",
        help="judge stored sessions again under --criteria-version without running the agent (sessions untouched)",
    )
    cmd.add_argument(
        "--threshold", action="append", metavar="METRIC=DELTA", help="as for report: exit 1 when a metric regresses"
    )
    cmd.add_argument(
        "--repeat", type=int, default=1, metavar="K", help="run each case K times, each run stored with its number"
    )
    cmd.add_argument("--workers", type=int, default=1, metavar="N", help="run the runs in N processes (default 1)")
    cmd.add_argument(
        "--shard", metavar="I/N", help="run only the I-th of N deterministic slices of the cases (a CI matrix)"
    )
    cmd.add_argument(
        "--drift",
        choices=("count", "fail"),
        default="count",
        help="a tool called with other arguments than recorded: answered and counted, the run judged by the "
        "evaluators (count, the default), or the run fails (fail)",
    )
    cmd.add_argument("--baseline", metavar="V", help="compare with this version (default: the recorded runs' version)")
    cmd.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    add_verdict_arguments(cmd)
    cmd.set_defaults(handler=_cmd_regress)
