"""The regression commands: ``diff`` two runs, ``stats`` of a tape, ``check`` tapes before CI trusts them."""

from __future__ import annotations

import argparse
import datetime as _dt
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.comparison import STRICT, Policy, compare, short
from otel_agent_replay.core import SideEffect, StepKind, TapeFormatError, TapeNotFoundError
from otel_agent_replay.tape import Tape, iter_spans, load_tape

from ._output import dump_json

# ``check`` exit status: one bit per kind of failure, OR-ed together.
CHECK_FORMAT = 1
CHECK_SECRET = 2
CHECK_STALE = 4
CHECK_VERSIONS = 8

_CHECK_EPILOG = (
    "exit status: 0 all good; otherwise the OR of 1 (a tape is missing or malformed), 2 (a value matches "
    "a default secret pattern or sits under a secret key: it was recorded unredacted), 4 (stale: a run "
    "older than --max-age-days, or a step past its expires_at), 8 (steps of one tool disagree on "
    "tool_version)."
)

_PROGRESS_TAPES = 4
_PROGRESS_BYTES = 20 * 1024 * 1024


def _with_progress(paths: list[str], err: Console) -> Iterator[str]:
    """Yield the paths, showing a progress bar on a terminal when there are many or large tapes."""
    sizes = [Path(p).stat().st_size if Path(p).exists() else 0 for p in paths]
    if err.is_terminal and (len(paths) >= _PROGRESS_TAPES or sum(sizes) >= _PROGRESS_BYTES):
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("reading tapes", total=sum(sizes) or len(paths))
            for path, size in zip(paths, sizes, strict=True):
                yield path
                progress.advance(task, size or 1)
        return
    yield from paths


# --- diff --------------------------------------------------------------------------------


def _policy(args: argparse.Namespace) -> Policy:
    base = STRICT if args.strict else Policy()
    unordered: dict[str, str | None] = {}
    for spec in args.unordered or ():
        pattern, _, key = spec.partition("=")
        unordered[pattern] = key or None
    return Policy(ignore=base.ignore + tuple(args.ignore or ()), unordered=unordered)


def _cmd_diff(args: argparse.Namespace, out: Console, err: Console) -> int:
    result = compare(args.a, args.b, _policy(args))
    if args.json:
        dump_json(result.to_json())
        return 0 if result.same else 1
    if result.same:
        out.print(f"[green]same[/green]: {escape(result.left)} and {escape(result.right)} do not diverge")
        return 0
    out.print(
        f"[bold]{escape(result.left)}[/bold] → [bold]{escape(result.right)}[/bold]: "
        f"[red]{len(result.divergences)} divergence(s)[/red]"
    )
    for i, d in enumerate(result.divergences):
        mark = "[bold red]first[/bold red] " if i == 0 else ""
        out.print(f"  {mark}[yellow]{escape(d.kind)}[/yellow] {escape(d.step)} {escape(d.path)}")
        out.print(f"      [red]- {escape(short(d.left, 160))}[/red]")
        out.print(f"      [green]+ {escape(short(d.right, 160))}[/green]")
    return 1


# --- stats -------------------------------------------------------------------------------


@dataclass
class _ToolStats:
    calls: int = 0
    errors: int = 0
    retries: int = 0
    total_ns: int = 0
    max_ns: int = 0
    side_effect: str | None = None

    def to_json(self, tool: str) -> dict[str, Any]:
        return {
            "tool": tool,
            "calls": self.calls,
            "errors": self.errors,
            "error_rate": round(self.errors / self.calls, 4) if self.calls else 0.0,
            "mean_ms": round(self.total_ns / self.calls / 1e6, 3) if self.calls else 0.0,
            "max_ms": round(self.max_ns / 1e6, 3),
            "retries": self.retries,
            "side_effect": self.side_effect,
            "side_effect_calls": self.calls if self.side_effect not in (None, "model", SideEffect.READ_ONLY) else 0,
        }


def tape_stats(tapes: Iterable[Tape]) -> list[dict[str, Any]]:
    """Per tool: calls, errors, error rate, mean/max latency, retries, side-effect calls."""
    per_tool: dict[str, _ToolStats] = defaultdict(_ToolStats)
    for tape in tapes:
        for run in tape.runs:
            seen: set[str] = set()
            for step in run.steps:
                stats = per_tool[step.tool]
                stats.calls += 1
                stats.errors += step.error is not None
                stats.total_ns += max(step.duration_ns, 0)
                stats.max_ns = max(stats.max_ns, step.duration_ns)
                stats.side_effect = ("model" if step.kind == StepKind.LLM else step.side_effect) or stats.side_effect
                if step.call_key in seen:
                    stats.retries += 1  # the same call again in one run
                seen.add(step.call_key)
    return [per_tool[name].to_json(name) for name in sorted(per_tool)]


def _cmd_stats(args: argparse.Namespace, out: Console, err: Console) -> int:
    tapes = [load_tape(path) for path in _with_progress(list(args.tapes), err)]
    rows = tape_stats(tapes)
    if args.json:
        dump_json(rows)
        return 0
    table = Table(title=f"{sum(len(t.runs) for t in tapes)} run(s) on {len(tapes)} tape(s)")
    for column in ("tool", "calls", "errors", "error rate", "mean ms", "max ms", "retries", "side effect"):
        table.add_column(column, justify="left" if column in ("tool", "side effect") else "right")
    for row in rows:
        table.add_row(
            escape(row["tool"]),
            str(row["calls"]),
            str(row["errors"]),
            f"{row['error_rate']:.1%}",
            f"{row['mean_ms']:.1f}",
            f"{row['max_ms']:.1f}",
            str(row["retries"]),
            escape(row["side_effect"] or "undeclared"),
        )
    out.print(table)
    return 0


# --- check -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One problem ``check`` found."""

    kind: str
    """``format``, ``secret``, ``stale`` or ``versions``."""
    where: str
    message: str


_BITS = {"format": CHECK_FORMAT, "secret": CHECK_SECRET, "stale": CHECK_STALE, "versions": CHECK_VERSIONS}


def _secret_findings(path: str) -> list[Finding]:
    found = []
    for record in iter_spans(path):
        texts = {"the span name": record.name}
        if record.error is not None:
            texts["the error message"] = record.error.message
        for where, text in texts.items():
            if DEFAULT_REDACTOR.redact_text(text) != text:
                found.append(
                    Finding(
                        "secret",
                        f"{path}:{record.line}",
                        f"span {record.name!r}: {where} holds a value the default redaction would remove; "
                        "rotate that secret, then re-record the tape with redaction on",
                    )
                )
        for key, value in record.attributes.items():
            if not isinstance(value, str):
                continue
            try:
                data = orjson.loads(value) if value[:1] in ("{", "[", '"') else None
            except orjson.JSONDecodeError:
                data = None
            if data is not None:
                leaked = DEFAULT_REDACTOR(data) != data
            else:
                leaked = DEFAULT_REDACTOR.redact_text(value) != value
            if leaked:
                found.append(
                    Finding(
                        "secret",
                        f"{path}:{record.line}",
                        f"span {record.name!r} attribute {key} holds a value the default redaction would remove; "
                        "rotate that secret, then re-record the tape with redaction on",
                    )
                )
    return found


def check_tapes(paths: Iterable[str], *, max_age_days: float | None = None) -> list[Finding]:
    """Everything ``check`` reports for these tapes."""
    findings: list[Finding] = []
    versions: dict[str, dict[str, str]] = defaultdict(dict)
    now = _dt.datetime.now(_dt.timezone.utc)
    for path in paths:
        try:
            tape = load_tape(path)
        except (TapeFormatError, TapeNotFoundError) as exc:
            findings.append(Finding("format", path, str(exc)))
            continue
        if not tape.runs and tape.warnings:  # nothing loaded, something skipped: not an empty tape
            findings.append(
                Finding("format", path, f"no span could be read, every line was skipped: {tape.warnings[0]}")
            )
            continue
        findings.extend(_secret_findings(path))
        for run in tape.runs:
            if max_age_days is not None and run.recorded_at:
                when = _dt.datetime.fromisoformat(run.recorded_at)
                age = (now - when).total_seconds() / 86400
                if age > max_age_days:
                    findings.append(
                        Finding(
                            "stale",
                            f"{path} run {run.run_id}",
                            f"recorded {age:.1f} days ago, older than --max-age-days {max_age_days:g}; re-record it",
                        )
                    )
            for step in run.steps:
                if step.expires_at and _dt.datetime.fromisoformat(step.expires_at) < now:
                    findings.append(
                        Finding(
                            "stale",
                            f"{path} run {run.run_id} seq {step.seq}",
                            f"{step.tool} expired at {step.expires_at}; re-record it",
                        )
                    )
                if step.tool_version is not None:
                    versions[step.tool].setdefault(step.tool_version, f"{path} run {run.run_id} seq {step.seq}")
    for tool, seen in sorted(versions.items()):
        if len(seen) > 1:
            where = "; ".join(f"{v} at {w}" for v, w in sorted(seen.items()))
            findings.append(Finding("versions", tool, f"steps of {tool} were recorded at different versions: {where}"))
    return findings


def _cmd_check(args: argparse.Namespace, out: Console, err: Console) -> int:
    findings = check_tapes(_with_progress(list(args.tapes), err), max_age_days=args.max_age_days)
    status = 0
    for finding in findings:
        status |= _BITS[finding.kind]
    if args.json:
        dump_json({"status": status, "findings": [f.__dict__ for f in findings]})
        return status
    for finding in findings:
        out.print(f"[red]{finding.kind}[/red] {escape(finding.where)}: {escape(finding.message)}")
    if not findings:
        out.print(f"[green]ok[/green]: {len(args.tapes)} tape(s) checked")
    return status


def register(sub: Any) -> None:
    """Add ``diff``, ``stats`` and ``check`` to the command's subparsers."""
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
    diff.set_defaults(handler=_cmd_diff)

    stats = sub.add_parser("stats", help="per tool: calls, error rate, latency, retries, side effects")
    stats.add_argument("tapes", nargs="+", help="one or more tapes")
    stats.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    stats.set_defaults(handler=_cmd_stats)

    check = sub.add_parser(
        "check", help="check tapes: format, unredacted secrets, staleness, tool versions", epilog=_CHECK_EPILOG
    )
    check.add_argument("tapes", nargs="+", help="one or more tapes")
    check.add_argument("--max-age-days", type=float, default=None, help="runs older than this are stale")
    check.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    check.set_defaults(handler=_cmd_check)


__all__ = ["Finding", "check_tapes", "register", "tape_stats"]
