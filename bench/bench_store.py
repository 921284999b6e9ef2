"""Evidence store benchmark: ingest rate (spans/s into SQLite) and report time on 10,000 sessions.

A script, not a test (``python bench/bench_store.py [--quick] [--json OUT]``). It records a small
support agent in two versions (1.0: a look-up and two model calls per session; 1.1: also a
refund call answered out of bounds, a timed-out look-up and its retry), multiplies each tape into
copies with fresh run and trace ids (the same behaviour, other sessions), then measures:

1. ingest: ``Store.ingest(path)`` of every tape into a fresh SQLite file (one transaction per
   tape: ``load_tape``, the rows, the upserts), as spans per second; then the same tapes again
   (every row an upsert that finds its row: the idempotent path);
2. report: ``report_rows(store, compare=("1.0", "1.1"), thresholds=…)`` plus ``format_report``
   as Markdown on the filled store (10,000 sessions, one evaluation each). **Target < 1 s.**

3. live ingest: ``record(path, store=...)`` of version 1.0's sessions, each run ingested into a
   fresh SQLite file as it ends, against ``record(path)`` alone: milliseconds per run;
4. regress: ``regress`` of version 1.1 on recorded 1.0 sessions (a record, an out-of-bounds replay,
   the ingest and two evaluations per case): cases per second.

``--postgres URL`` measures an empty PostgreSQL database instead (ingested once, not per rep).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import benchlib
from benchlib import full_quick

from otel_agent_replay import agent_run, model_call, record, regress, tool
from otel_agent_replay.regression import no_out_of_bounds, tool_success
from otel_agent_replay.store import OUT_OF_BOUNDS, Evaluation, format_report, open_store, report_rows

TARGETS = {"report_seconds_10k_sessions": "< 1 s"}
_ID32 = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
_fail_once: set[str] = set()


@dataclass(frozen=True)
class Plan(benchlib.BasePlan):
    """Sizes of one run, as ``full_quick(full, quick)``."""

    sessions_per_tape: int = full_quick(1_000, 250)
    copies: int = full_quick(5, 2)
    """Copies of each version's tape: sessions = 2 × sessions_per_tape × copies."""
    ingest_reps: int = full_quick(3, 2)
    report_reps: int = full_quick(7, 5)
    live_sessions: int = full_quick(1_000, 200)
    regress_cases: int = full_quick(200, 50)


FULL, QUICK = benchlib.plans(Plan)


@tool(side_effect="read_only", version="1")
def fetch_account(customer_id: str) -> dict[str, Any]:
    if customer_id in _fail_once:
        _fail_once.discard(customer_id)
        raise TimeoutError("billing API timed out")
    return {"customer_id": customer_id, "plan": "pro", "due": 42}


@tool(side_effect="write")
def issue_refund(customer_id: str) -> dict[str, Any]:
    return {"error": OUT_OF_BOUNDS, "tool": "issue_refund"}


@model_call(provider="stand-in", model="tiny-chat")
def chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = {"role": "assistant", "content": f"turn {len(messages)}"}
    return {"choices": [{"message": reply}], "usage": {"prompt_tokens": 20 * len(messages), "completion_tokens": 9}}


def session(customer_id: str, version: str) -> None:
    with agent_run("support-bot", agent_version=version, input={"customer_id": customer_id}) as run:
        messages = [{"role": "system", "content": "Answer billing questions."}, {"role": "user", "content": "Due?"}]
        first = chat(messages)["choices"][0]["message"]
        if version == "1.1":
            issue_refund(customer_id)
            _fail_once.add(customer_id)
            with contextlib.suppress(TimeoutError):
                fetch_account(customer_id)
        account = fetch_account(customer_id)
        messages += [first, {"role": "tool", "content": str(account["due"])}]
        run.set_output(chat(messages))


def copy_with_new_ids(tape: Path, salt: str, out: Path) -> Path:
    text = tape.read_text(encoding="utf-8")
    out.write_text(_ID32.sub(lambda m: hashlib.sha256((salt + m.group(0)).encode()).hexdigest()[:32], text))
    return out


def spans_on(tape: Path) -> int:
    with tape.open("rb") as f:
        return sum(1 for _ in f)


class Bench:
    def __init__(self, plan: Plan, work: Path) -> None:
        self.plan = plan
        self.work = work
        self.report: benchlib.Report[Plan] = benchlib.Report(plan, benchlib.machine_info(work))
        self.tapes: list[Path] = []

    def record_tapes(self) -> None:
        for version in ("1.0", "1.1"):
            source = self.work / f"source-{version}.jsonl"
            with record(source):
                for n in range(self.plan.sessions_per_tape):
                    session(f"c{n}", version)
            self.tapes += [
                copy_with_new_ids(source, f"{version}/{c}", self.work / f"v{version}-{c}.jsonl")
                for c in range(self.plan.copies)
            ]
            source.unlink()
        spans = sum(map(spans_on, self.tapes))
        self.report.data["tapes"] = {
            "count": len(self.tapes),
            "spans": spans,
            "bytes": sum(t.stat().st_size for t in self.tapes),
        }
        print(f"  {len(self.tapes)} tapes, {spans:,} spans", file=sys.stderr)

    def ingest(self, postgres: str | None = None) -> str:
        """Ingest every tape into fresh SQLite files (or once into the empty PostgreSQL database given)."""
        where = "PostgreSQL" if postgres else "SQLite"
        sec = f"1. ingest into {where} (one transaction per tape)"
        spans = self.report.data["tapes"]["spans"]
        first: list[float] = []
        again: list[float] = []
        locations = (
            [postgres] if postgres else [str(self.work / f"store-{rep}.db") for rep in range(self.plan.ingest_reps)]
        )
        for location in locations:
            with open_store(location) as store:
                if store.counts()["agent_session"]:
                    raise SystemExit(f"{store.location}: the benchmark needs an empty store")
                start = time.perf_counter()
                for tape in self.tapes:
                    store.ingest(tape)
                first.append(time.perf_counter() - start)
                start = time.perf_counter()
                for tape in self.tapes:
                    store.ingest(tape)
                again.append(time.perf_counter() - start)
                counts = store.counts()
        for rate_name, times in (("first ingest", first), ("ingest again (upserts that find their rows)", again)):
            best = statistics.median(times)
            spread = f"{spans / max(times):,.0f}..{spans / min(times):,.0f}"
            self.report.add(benchlib.Row(sec, f"{rate_name}: spans per second", spans / best, "spans/s", spread=spread))
        self.report.add(benchlib.Row(sec, "first ingest: seconds for all tapes", statistics.median(first), "s"))
        self.report.add(benchlib.Row(sec, "sessions stored", counts["agent_session"], "rows"))
        self.report.add(benchlib.Row(sec, "rows stored (all six tables)", sum(counts.values()), "rows"))
        if not postgres:
            self.report.add(
                benchlib.Row(sec, "file size (after a WAL checkpoint)", _size_mb(Path(locations[-1])), "MB")
            )
        self.report.data["ingest"] = {
            "backend": where,
            "spans": spans,
            "first_s": first,
            "again_s": again,
            "counts": counts,
        }
        return locations[-1]

    def report_time(self, db: str) -> None:
        sec = "2. report on the stored sessions"
        with open_store(db) as store:
            start = time.perf_counter()
            for s in store.sessions():
                passed = s.agent_version == "1.0" or int(s.session_id[:4], 16) % 3 == 0
                store.add_evals(s.session_id, [Evaluation("answered", float(passed), passed, None, "rules-1")])
            evals_s = time.perf_counter() - start
            sessions = store.counts()["agent_session"]
            times = []
            markdown = ""
            for _ in range(self.plan.report_reps):
                start = time.perf_counter()
                report = report_rows(store, compare=("1.0", "1.1"), thresholds=["tool_success_rate=0.05"])
                markdown = format_report(report, "md")
                times.append(time.perf_counter() - start)
        best = statistics.median(times)
        target = "< 1 s" if sessions >= 10_000 else ""
        ok = best < 1.0
        self.report.add(
            benchlib.checked_row(
                sec,
                f"report_rows + format_report(md), {sessions:,} sessions",
                best,
                "s",
                target,
                ok,
                spread=f"{min(times):.3f}..{max(times):.3f}",
            )
        )
        self.report.add(benchlib.Row(sec, "add_evals, one transaction per session", sessions / evals_s, "sessions/s"))
        self.report.data["report"] = {"sessions": sessions, "seconds": times, "markdown": markdown}

    def live_ingest(self) -> None:
        sec = "3. live ingest: record(store=) (one transaction per run)"
        n = self.plan.live_sessions
        per_run: dict[str, float] = {}
        for label, store in (("record(path) alone", None), ("record(path, store=SQLite file)", self.work / "live.db")):
            tape = self.work / f"live-{'store' if store else 'tape'}.jsonl"
            start = time.perf_counter()
            with record(tape, store=store):
                for i in range(n):
                    session(f"live{i}", "1.0")
            per_run[label] = (time.perf_counter() - start) / n
            self.report.add(benchlib.Row(sec, f"{label}: per run (5 spans)", per_run[label] * 1e3, "ms"))
        with open_store(self.work / "live.db") as store:
            stored = store.counts()["agent_session"]
        if stored != n:
            raise SystemExit(f"live ingest stored {stored} sessions of {n}")
        self.report.data["live_ingest"] = {"runs": n, "seconds_per_run": per_run}

    def regress_rate(self) -> None:
        sec = "4. regress: v1.1 on recorded v1.0 sessions"
        n = self.plan.regress_cases
        suite = self.work / "suite-v1.0.jsonl"  # one tape of n recorded runs: n cases
        with record(suite):
            for i in range(n):
                session(f"r{i}", "1.0")
        db = self.work / "regress.db"
        with open_store(db) as store:
            store.ingest(suite)
        start = time.perf_counter()
        result = regress(
            suite,
            lambda customer_id: session(customer_id, "1.1"),
            agent_version="1.1",
            store=db,
            evaluators=(tool_success(), no_out_of_bounds()),
        )
        seconds = time.perf_counter() - start
        # v1.1 reads "due" from the out-of-bounds answer to its retried look-up: each case ends in a KeyError
        stored = all(c.session_id is not None for c in result.cases)
        if len(result.cases) != n or not stored or result.out_of_bounds_calls != 2 * n:
            raise SystemExit(f"regress: {len(result.cases)} cases, {result.out_of_bounds_calls} out-of-bounds calls")
        self.report.add(benchlib.Row(sec, f"cases per second ({n} cases, 2 evaluators)", n / seconds, "cases/s"))
        self.report.data["regress"] = {"cases": n, "seconds": seconds}


def _size_mb(db: Path) -> float:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db.stat().st_size / benchlib.MB


def render(report: benchlib.Report[Plan]) -> str:
    m = report.machine
    lines = [
        f"otel-agent-replay store benchmark ({report.plan.mode} run)",
        f"date {m['date']}  python {m['python']}  cpus {m['cpu_count']}  sqlite {m['sqlite']}  psycopg {m['psycopg']}",
        f"platform {m['platform']}  cpu {m['cpu_model']}",
        f"store folder {m['tape_dir']} ({m['tape_fs']})",
        f"load average at start {m['loadavg_start']}, at end {m.get('loadavg_end', '?')}",
    ]
    section = None
    for row in report.rows:
        if row.section != section:
            section = row.section
            lines += ["", section]
        cells = f"  {row.name:<62} {benchlib.fmt_value(row.value):>10} {row.unit:<10} {row.target:>6} {row.verdict:>5}"
        lines.append((cells + (f"  {row.spread}" if row.spread else "")).rstrip())
    lines.append("")
    lines.append(report.data.get("report", {}).get("markdown", ""))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = benchlib.arg_parser(__doc__, "1,000 sessions instead of 10,000, about 3 s", "unused")
    parser.add_argument(
        "--postgres", metavar="URL", help="measure an empty PostgreSQL database (postgresql://...) instead of SQLite"
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    with benchlib.folder(None, "bench-store-") as work:
        bench = Bench(plan, work)
        bench.report.machine["sqlite"] = sqlite3.sqlite_version
        bench.report.machine["psycopg"] = metadata.version("psycopg")
        print(f"benchmark ({plan.mode}) in {work}", file=sys.stderr)
        bench.record_tapes()
        db = bench.ingest(args.postgres)
        bench.report_time(db)
        bench.live_ingest()
        bench.regress_rate()
    benchlib.conclude(bench.report, render, time.perf_counter() - started, args.json, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
