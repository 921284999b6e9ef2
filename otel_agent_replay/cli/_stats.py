"""``stats`` of tapes: per tool, calls, error rate, latency, retries and side effects."""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Tape, load_tape

from ._output import dump_json, with_progress


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
            seen: set[tuple[str, object]] = set()
            for step in run.steps:
                stats = per_tool[step.tool]
                stats.calls += 1
                stats.errors += step.error is not None
                stats.total_ns += max(step.duration_ns, 0)
                stats.max_ns = max(stats.max_ns, step.duration_ns)
                stats.side_effect = ("model" if step.kind == StepKind.LLM else step.side_effect) or stats.side_effect
                call = (step.call_key, step.attributes.get(A.TARGET))
                if call in seen:
                    stats.retries += 1  # the same call on the same target again in one run
                seen.add(call)
    return [per_tool[name].to_json(name) for name in sorted(per_tool)]


def _cmd_stats(args: argparse.Namespace, out: Console, err: Console) -> int:
    tapes = [load_tape(path, redactor=DEFAULT_REDACTOR) for path in with_progress(list(args.tapes), err)]
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


def register(sub: Any) -> None:
    """Add ``stats`` to the command's subparsers."""
    stats = sub.add_parser("stats", help="per tool: calls, error rate, latency, retries, side effects")
    stats.add_argument("tapes", nargs="+", help="one or more tapes")
    stats.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    stats.set_defaults(handler=_cmd_stats)


__all__ = ["register", "tape_stats"]
