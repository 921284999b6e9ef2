"""What ``bench_record.py`` and ``bench_replay.py`` share: plan, timing, providers, report.

A plain module, not a package and not a script. Each benchmark is run as a script
(``python bench/bench_record.py``), and Python puts the script's own folder first on
``sys.path``, so ``import benchlib`` finds this file whatever the working directory.

- the plan: ``full_quick`` declares a size for the full and the ``--quick`` run, ``plans`` builds
  both; ``BasePlan`` holds the sizes both scripts share;
- the timing: ``Sample`` (nanoseconds per operation, one value per repetition) and ``time_loop``;
- ``BenchBase``: the two providers (the application's and the reference for the bare span), the
  bare-span reference, the SDK span with a step's attributes, and the rows timed against it;
- the report: ``Row`` (``checked_row`` for a row with a target), ``Report``, the table
  (``render_report``), the machine facts, the command line, and the printing and JSON output at
  the end (``conclude``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, TypeVar

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link

NS_PER_US = 1_000
MB = 1_000_000
RESULT_ATTRIBUTE = "gen_ai.tool.call.result"


# --- plan ------------------------------------------------------------------------------------


def full_quick(full: Any, quick: Any) -> Any:
    """A plan field: its value in the full run and in the ``--quick`` run."""
    return field(metadata={"full": full, "quick": quick})


@dataclass(frozen=True)
class BasePlan:
    """The sizes every ``Plan`` starts with, the same in both scripts: they measure the bare span alike.

    Each field of a plan is declared with ``full_quick(full, quick)``; ``plans(Plan)`` builds both runs.
    """

    mode: str = full_quick("full", "quick")
    reps: int = full_quick(7, 5)
    bare_reps: int = full_quick(15, 9)
    bare_n: int = full_quick(10_000, 4_000)
    attrs_n: int = full_quick(10_000, 3_000)
    warmup_n: int = full_quick(500, 200)


PlanT = TypeVar("PlanT", bound=BasePlan)


def plans(plan: type[PlanT]) -> tuple[PlanT, PlanT]:
    """The full and the ``--quick`` ``plan``, from the ``full_quick`` values of its fields."""

    def run(which: str) -> PlanT:
        return plan(**{f.name: f.metadata[which] for f in fields(plan)})

    return run("full"), run("quick")


# --- timing ----------------------------------------------------------------------------------


@dataclass
class Sample:
    """Nanoseconds per operation, one value per repetition."""

    per_op_ns: list[float]

    @property
    def median_ns(self) -> float:
        return statistics.median(self.per_op_ns)

    @property
    def us(self) -> float:
        return self.median_ns / NS_PER_US

    @property
    def spread(self) -> str:
        lo, hi = min(self.per_op_ns) / NS_PER_US, max(self.per_op_ns) / NS_PER_US
        return f"{lo:.1f}..{hi:.1f}"

    def to_json(self) -> dict[str, Any]:
        return {
            "median_us": round(self.us, 3),
            "reps_us": [round(v / NS_PER_US, 3) for v in self.per_op_ns],
        }


def time_loop(loop: Callable[[int], object], n: int, reps: int, warmup: int) -> Sample:
    """Run ``loop(n)`` ``reps`` times after a warm-up; nanoseconds per operation for each rep.

    The garbage collector stays on, as in normal operation.
    """
    if warmup:
        loop(warmup)
    out: list[float] = []
    for _ in range(reps):
        start = time.perf_counter_ns()
        loop(n)
        out.append((time.perf_counter_ns() - start) / n)
    return Sample(out)


# --- the providers, the bare span ------------------------------------------------------------


class DiscardExporter(SpanExporter):
    """Accepts every batch and throws it away; counts what it was given."""

    def __init__(self) -> None:
        self.received = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.received += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class BenchBase(Generic[PlanT]):
    """What both scripts' ``Bench`` hold: the plan, the providers, the report, the bare-span reference.

    The application's provider is set as the global one: a ``BatchSpanProcessor`` to a discarding
    exporter (an OTLP exporter stand-in). The reference provider has the same set-up, without
    anything of ours, so the bare span pays nothing of ours.
    """

    def __init__(self, plan: PlanT, machine: dict[str, Any]) -> None:
        self.plan = plan
        self.app_exporter = DiscardExporter()
        self.app_provider = TracerProvider()
        self.app_provider.add_span_processor(BatchSpanProcessor(self.app_exporter))
        trace.set_tracer_provider(self.app_provider)
        self.bare_provider = TracerProvider()
        self.bare_provider.add_span_processor(BatchSpanProcessor(DiscardExporter()))
        self.bare_tracer = self.bare_provider.get_tracer("bench.bare")
        self.report: Report[PlanT] = Report(plan, machine)
        self.bare_ref_ns = 0.0

    def bare(self) -> Sample:
        """The bare span: ``start_as_current_span("x")``, no attributes, on the reference provider."""
        start = self.bare_tracer.start_as_current_span

        def loop(n: int) -> None:
            for _ in range(n):
                with start("x"):
                    pass

        p = self.plan
        return time_loop(loop, p.bare_n, p.bare_reps, p.warmup_n * 4)

    def sdk_span(self, name: str, attrs: dict[str, Any], result: str, links: Sequence[Link] = ()) -> Sample:
        """A span with a step's attributes (and links) set directly on the reference provider."""
        start = self.bare_tracer.start_as_current_span

        def loop(n: int) -> None:
            for _ in range(n):
                with start(name, attributes=attrs, links=links) as span:
                    span.set_attribute(RESULT_ATTRIBUTE, result)

        p = self.plan
        return time_loop(loop, p.attrs_n, p.reps, p.warmup_n)

    def x_bare(self, ns: float) -> float:
        """``ns`` as a multiple of the bare-span reference."""
        return ns / self.bare_ref_ns

    def bare_reference(self, sec: str, before: Sample, after: Sample) -> dict[str, Any]:
        """Take the mean of the bare span before and after as the reference; its rows and JSON."""
        ref = (before.median_ns + after.median_ns) / 2
        self.bare_ref_ns = ref
        drift = (after.median_ns - before.median_ns) / before.median_ns * 100
        rep = self.report
        rep.add(self.timed_row(sec, "bare span, before", before))
        rep.add(self.timed_row(sec, "bare span, after", after))
        rep.add(Row(sec, f"bare span, mean = reference (drift {drift:+.1f}%)", ref / NS_PER_US, "µs", 1.0))
        return {
            "bare_before": before.to_json(),
            "bare_after": after.to_json(),
            "bare_reference_us": round(ref / NS_PER_US, 3),
            "bare_drift_percent": round(drift, 2),
        }

    def timed_row(self, sec: str, name: str, sample: Sample, target: str = "", ok: bool | None = None) -> Row:
        """A row of µs per operation, its ratio to the bare span and its spread (and ``ok``: the target met)."""
        result = "" if ok is None else verdict(ok)
        return Row(sec, name, sample.us, "µs", self.x_bare(sample.median_ns), target, result, sample.spread)

    def us_row(self, sec: str, name: str, us: float) -> Row:
        """A row of µs computed from other rows (no spread), with its ratio to the bare span."""
        return Row(sec, name, us, "µs", us * NS_PER_US / self.bare_ref_ns)


# --- folders and the machine -----------------------------------------------------------------


def filesystem_of(path: Path) -> str:
    """``type on device`` of the mount holding ``path`` (from /proc/mounts), or '?'."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return "?"
    best = ("", "?", "?")
    target = str(path.resolve())
    for entry in mounts:
        parts = entry.split()
        if len(parts) < 3:
            continue
        device, point, kind = parts[0], parts[1].replace("\\040", " "), parts[2]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, kind, device)
    return f"{best[1]} on {best[2]}"


@contextmanager
def folder(base: str | None, prefix: str) -> Iterator[Path]:
    """A fresh folder (under ``base``, or the default temporary location), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


def machine_info(
    tape_dir: Path, software: dict[str, str] | None = None, more: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The machine, the versions (then ``software``), the tape folder (then ``more``), the load."""
    cpu_model = "?"
    try:
        for entry in Path("/proc/cpuinfo").read_text().splitlines():
            if entry.startswith("model name"):
                cpu_model = entry.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "opentelemetry_sdk": metadata.version("opentelemetry-sdk"),
        "opentelemetry_api": metadata.version("opentelemetry-api"),
        "orjson": metadata.version("orjson"),
        "otel_agent_replay": metadata.version("otel-agent-replay"),
        **(software or {}),
        "tape_dir": str(tape_dir),
        "tape_fs": filesystem_of(tape_dir),
        **(more or {}),
        "loadavg_start": loadavg(),
    }


def loadavg() -> str:
    """The 1/5/15-minute load averages: other processes competing for the CPUs make numbers noisy."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# --- report ----------------------------------------------------------------------------------


@dataclass
class Row:
    section: str
    name: str
    value: float | int | str
    unit: str
    ratio: float | None = None
    target: str = ""
    verdict: str = ""
    spread: str = ""


@dataclass
class Report(Generic[PlanT]):
    plan: PlanT
    machine: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  {row.name.strip()}: {fmt_value(row.value)} {row.unit}", file=sys.stderr, flush=True)


def fmt_value(value: float | int | str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def checked_row(
    sec: str, name: str, value: float | int | str, unit: str, target: str, ok: bool, spread: str = ""
) -> Row:
    """A row with its target: PASS when ``ok``, else MISS."""
    return Row(sec, name, value, unit, target=target, verdict=verdict(ok), spread=spread)


VERDICTS = ("PASS", "MISS", "ERROR")


def render_report(
    report: Report[Any],
    kind: str,
    *,
    reps_more: str = "",
    software_line: str = "",
    folder_note: str = "",
    verdicts: Sequence[str] = VERDICTS,
) -> str:
    """The heading, one table per section, the count of each verdict and a drift warning.

    ``kind`` names the benchmark in the title, ``reps_more`` ends the title's repetitions,
    ``software_line`` is a line after the versions, ``folder_note`` ends the tape folder line.
    """
    m = report.machine
    plan = report.plan
    out = io.StringIO()
    out.write(
        f"otel-agent-replay {kind} benchmark ({plan.mode} run; median of {plan.reps} reps, "
        f"{plan.bare_reps} for the bare span{reps_more})\n"
    )
    out.write(
        f"date {m['date']}  python {m['python']}  cpus {m['cpu_count']}  "
        f"opentelemetry-sdk {m['opentelemetry_sdk']}  orjson {m['orjson']}\n"
    )
    if software_line:
        out.write(software_line + "\n")
    out.write(f"platform {m['platform']}  cpu {m['cpu_model']}\n")
    out.write(f"tape folder {m['tape_dir']} ({m['tape_fs']}){folder_note}\n")
    out.write(f"load average at start {m['loadavg_start']}, at end {m.get('loadavg_end', '?')}\n")
    header = ("", "value", "unit", "x bare", "target", "result", "spread (min..max)")
    widths = (62, 10, 8, 7, 8, 7, 18)

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cells[1].rjust(widths[1]), cells[2].ljust(widths[2])]
        rest += [cells[3].rjust(widths[3]), cells[4].rjust(widths[4]), cells[5].rjust(widths[5])]
        rest.append(cells[6])
        return (first + " " + " ".join(rest)).rstrip() + "\n"

    section = None
    for row in report.rows:
        if row.section != section:
            section = row.section
            out.write("\n" + section + "\n")
            out.write(line(header))
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else ""
        out.write(line(("  " + row.name, fmt_value(row.value), row.unit, ratio, row.target, row.verdict, row.spread)))
    counts = ", ".join(f"{sum(r.verdict == v for r in report.rows)} {v}" for v in verdicts)
    out.write(f"\ntargets: {counts}\n")
    drift = report.data.get("per_call", {}).get("bare_drift_percent")
    if isinstance(drift, float) and abs(drift) > 15:
        out.write(
            f"warning: the bare span drifted {drift:+.0f}% between before and after; other processes were "
            "probably competing for the CPU (see the load average): rerun on a quiet machine\n"
        )
    return out.getvalue()


# --- the command line ------------------------------------------------------------------------


def arg_parser(doc: str | None, quick_help: str, profile_help: str) -> argparse.ArgumentParser:
    """The options both scripts take: ``--quick``, ``--json OUT``, ``--profile``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="OUT", help="also write the numbers as JSON to OUT")
    parser.add_argument("--profile", action="store_true", help=profile_help)
    return parser


def profile_text(profiler: cProfile.Profile, title: str) -> str:
    """``title`` and the top functions of a profile by own and by cumulative time."""
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(25)
    return f"{title}:\n" + out.getvalue()


def conclude(
    report: Report[Any],
    render: Callable[[Report[Any]], str],
    elapsed: float,
    json_path: str | None,
    targets: dict[str, Any],
    profile: str = "",
) -> None:
    """Print the table (and the profile, if any), and write the JSON to ``json_path`` if given."""
    report.machine["loadavg_end"] = loadavg()
    report.data["seconds_total"] = round(elapsed, 1)
    print(render(report) + f"total time {elapsed:.0f} s")
    if profile:
        print("\n" + profile)
    if json_path:
        out = {
            "machine": report.machine,
            "plan": asdict(report.plan),
            "targets": targets,
            "results": report.data,
            "rows": [asdict(r) for r in report.rows],
        }
        Path(json_path).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
