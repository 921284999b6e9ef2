"""``check`` tapes before CI trusts them: format, unredacted secrets, staleness, tool versions, provenance."""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import warnings
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.conversation import redact_stream
from otel_agent_replay.core import StepKind, TapeFormatError, TapeNotFoundError, TapeWarning
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Run, load_tape, removed_lines

from ._output import dump_json, with_progress
from ._stand_ins import only_stand_ins, tape_stand_ins

# ``check`` exit status: one bit per kind of failure, OR-ed together.
CHECK_FORMAT = 1
CHECK_SECRET = 2
CHECK_STALE = 4
CHECK_VERSIONS = 8
CHECK_PROVENANCE = 16

_CHECK_EPILOG = (
    "exit status: 0 all good; otherwise the OR of 1 (a tape is missing, malformed or empty, its last line is "
    "torn, or a run is incomplete: its run span never reached the tape), 2 (a value matches a default secret "
    "pattern or sits under a secret key: it was recorded unredacted), 4 (stale: a run older than --max-age, or "
    "a step past its expires_at), 8 (steps of one tool disagree on tool_version), 16 (with --provenance: a run "
    "or model step lacks what it was captured with: SDK version, recorded_at, provider, model)."
)


@dataclass(frozen=True)
class Finding:
    """One problem ``check`` found."""

    kind: str
    """``format``, ``secret``, ``stale``, ``versions`` or ``provenance``."""
    where: str
    """``file:line`` when the problem is on one line, else the tape and run."""
    message: str


_BITS = {
    "format": CHECK_FORMAT,
    "secret": CHECK_SECRET,
    "stale": CHECK_STALE,
    "versions": CHECK_VERSIONS,
    "provenance": CHECK_PROVENANCE,
}


def _secret_finding(path: str, line: int, span: str, where: str, kinds: tuple[str, ...]) -> Finding:
    # kind and place only: the value itself never reaches the report (nor CI logs)
    owner = f"span {span!r}: " if span else ""
    return Finding(
        "secret",
        f"{path}:{line}",
        f"{owner}{where} holds a secret ({', '.join(kinds)}) that the default redaction would remove; "
        "rotate that secret, then re-record the tape with redaction on",
    )


def _kinds(before: Any) -> tuple[str, ...]:
    """The kinds of secret a value held (as ``Redactor.secret_kinds`` names them), a stream's too."""
    data = before
    if isinstance(before, str) and before[:1] in ("{", "[", '"'):
        try:
            data = orjson.loads(before)
        except orjson.JSONDecodeError:
            data = before
    kinds = set(DEFAULT_REDACTOR.secret_kinds(data)) - {"secret"}
    if not kinds and isinstance(data, dict):  # a stream whose secret is split over its events

        def scan(text: str) -> str:
            kinds.update(DEFAULT_REDACTOR.secret_kinds(text))
            return DEFAULT_REDACTOR.redact_text(text)

        redact_stream(data, scan)
    return tuple(sorted(kinds)) or ("secret",)


def _secret_findings(path: str, lines: dict[str, int]) -> list[Finding]:
    """What the default redaction would change, by the walk ``pull`` and ``push`` redact with and the rule
    capture applies to each value (``tape.clean_attribute``): capture and ``check`` agree by construction.
    Fills ``lines`` (span id → line) on the way."""
    from otel_agent_replay.backends import redact_traces, tape_messages  # protobuf: only for check

    found: list[Finding] = []
    messages = list(tape_messages(path))
    stand_ins = tape_stand_ins([message for _, message in messages])  # not findings: see _stand_ins
    for line, message in messages:
        for rs in message.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    lines.setdefault(span.span_id.hex(), line)

        def report(span: str, where: str, before: Any, line: int = line) -> None:
            if only_stand_ins(stand_ins, before):
                return
            found.append(_secret_finding(path, line, span, where, _kinds(before)))

        redact_traces(message, DEFAULT_REDACTOR, report)
    return found


def _when(text: str) -> _dt.datetime | None:
    try:
        when = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)


def _provenance_findings(path: str, run: Run, lines: dict[str, int]) -> list[Finding]:
    found = []
    if run.complete:
        missing = [
            name
            for name, attr in (("SDK version", A.SDK_VERSION), ("recorded_at", A.RECORDED_AT))
            if not run.attributes.get(attr)
        ]
        if missing:
            found.append(
                Finding(
                    "provenance",
                    f"{path}:{lines.get(run.span_id, 0)}",
                    f"run {run.run_id} is not stamped with its {' and '.join(missing)} (recorded by another writer "
                    "or an older SDK); re-record it so the tape says what it was captured with",
                )
            )
    for step in run.steps:
        if step.kind != StepKind.LLM:
            continue
        gaps = [
            name
            for name, value in (
                ("provider", step.provider),
                ("request model", step.model),
                ("response model", step.attributes.get(A.GEN_AI_RESPONSE_MODEL)),
            )
            if not value
        ]
        if gaps:
            found.append(
                Finding(
                    "provenance",
                    f"{path}:{lines.get(step.span_id, 0)}",
                    f"model step {step.step_id} of run {run.run_id} has no {', '.join(gaps)}; declare "
                    "@model_call(provider=..., model=...) and return the response's model",
                )
            )
    return found


def check_tapes(paths: Iterable[str], *, max_age_days: float | None = None, provenance: bool = False) -> list[Finding]:
    """Everything ``check`` reports for these tapes."""
    findings: list[Finding] = []
    versions: dict[str, dict[str, str]] = defaultdict(dict)
    now = _dt.datetime.now(_dt.timezone.utc)
    for path in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TapeWarning)  # each is a finding below
            try:
                tape = load_tape(path)
            except (TapeFormatError, TapeNotFoundError) as exc:
                findings.append(Finding("format", path, str(exc)))
                continue
            lines: dict[str, int] = {}
            every_line: dict[str, int] | None = lines
            try:
                findings.extend(_secret_findings(path, lines))
            except ValueError as exc:  # the loader skipped what it could not read; the reader cannot go on
                findings.append(Finding("format", path, f"not scanned for secrets: its lines cannot be read ({exc})"))
                every_line = None
        if not tape.runs and not tape.warnings:
            empty = Path(path).stat().st_size == 0
            what = "is empty (0 bytes)" if empty else "holds no spans"
            findings.append(
                Finding("format", f"{path}:1", f"the tape {what}: the recording never wrote a span; re-record it")
            )
        for warning in tape.warnings:
            where, _, message = warning.partition(": ")
            findings.append(Finding("format", where, message))
        for run in tape.runs:
            if not run.complete:
                first = min((lines.get(s.span_id, 0) for s in run.steps), default=0)
                findings.append(
                    Finding(
                        "format",
                        f"{path}:{first}",
                        f"run {run.run_id} is incomplete: its {len(run.steps)} step(s) are on the tape but its run "
                        "span never reached it (the process died mid-run, or the tape was cut); re-record it",
                    )
                )
            for span_id, message in removed_lines(run, every_line):
                line = lines.get(span_id, 0) if span_id else 0
                findings.append(Finding("format", f"{path}:{line}", message))
            if provenance:
                findings.extend(_provenance_findings(path, run, lines))
            when = _when(run.recorded_at) if run.recorded_at else None
            if max_age_days is not None and when is not None:
                age = (now - when).total_seconds() / 86400
                if age > max_age_days:
                    findings.append(
                        Finding(
                            "stale",
                            f"{path}:{lines.get(run.span_id, 0)}",
                            f"run {run.run_id} was recorded {age:.1f} days ago, older than --max-age "
                            f"{max_age_days:g} days; re-record it",
                        )
                    )
            for step in run.steps:
                expires = _when(step.expires_at) if step.expires_at else None
                if expires is not None and expires < now:
                    findings.append(
                        Finding(
                            "stale",
                            f"{path}:{lines.get(step.span_id, 0)}",
                            f"{step.tool} (run {run.run_id} seq {step.seq}) expired at {step.expires_at}; re-record it",
                        )
                    )
                if step.tool_version is not None:
                    versions[step.tool].setdefault(step.tool_version, f"{path} run {run.run_id} seq {step.seq}")
    for tool, seen in sorted(versions.items()):
        if len(seen) > 1:
            where = "; ".join(f"{v} at {w}" for v, w in sorted(seen.items()))
            findings.append(Finding("versions", tool, f"steps of {tool} were recorded at different versions: {where}"))
    return findings


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT_DAYS = {"s": 1 / 86400, "m": 1 / 1440, "h": 1 / 24, "d": 1.0, "w": 7.0, "": 1 / 86400}


def age_days(text: str) -> float:
    """``--max-age``: ``30d``, ``12h``, ``2w``, ``90m`` or seconds, as days."""
    match = _AGE.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number with a unit: 30d, 12h, 2w, 90m, or seconds")
    return float(match.group(1)) * _UNIT_DAYS[match.group(2)]


def _cmd_check(args: argparse.Namespace, out: Console, err: Console) -> int:
    max_age = args.max_age if args.max_age is not None else args.max_age_days
    findings = check_tapes(with_progress(list(args.tapes), err), max_age_days=max_age, provenance=args.provenance)
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
    """Add ``check`` to the command's subparsers."""
    check = sub.add_parser(
        "check", help="check tapes: format, unredacted secrets, staleness, tool versions", epilog=_CHECK_EPILOG
    )
    check.add_argument("tapes", nargs="+", help="one or more tapes")
    check.add_argument("--max-age", type=age_days, default=None, help="runs older than this are stale: 30d, 12h, 2w")
    check.add_argument("--max-age-days", type=float, default=None, help="the same in days (older spelling)")
    check.add_argument(
        "--provenance",
        action="store_true",
        help="also report runs and model steps not stamped with what they were captured with (exit bit 16)",
    )
    check.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    check.set_defaults(handler=_cmd_check)


__all__ = [
    "CHECK_FORMAT",
    "CHECK_PROVENANCE",
    "CHECK_SECRET",
    "CHECK_STALE",
    "CHECK_VERSIONS",
    "Finding",
    "age_days",
    "check_tapes",
    "register",
]
