"""Repetitions (issue 26): what one repetition costs us beside its model call, and what workers buy.

A script, not a test (``python bench/bench_repeat.py [--quick]``). The quiz agent of the tests (a
replayed look-up, then one chat completion over the real openai SDK) runs against the fake provider
on 127.0.0.1, so the model call is the loopback floor (about a millisecond), not a real model's
hundreds of milliseconds; the script prints both comparisons.

1. per repetition: ``regress(..., repeat=k, models="live")`` of two versions on C cases. The time
   in the store's writes (``Store.ingest`` of the new run and ``Store.add_evals``) is taken from
   timing wrappers around those two methods, per run; the whole run (record, replay, agent, model
   call, judge, store) per run beside it; the model call alone is timed around the SDK call.
2. verdicts: ``report_rows(..., compare=..., cases=True)`` plus ``format_report`` on that store:
   milliseconds per case (the per-case SQL, the Wilson intervals, Fisher's exact tests).
3. workers: the same regress (8 cases, 4 repetitions) with the provider answering after a fixed
   2 s, ``workers=1`` against ``workers=4``: the wall-clock ratio. Starting the workers costs one
   interpreter importing the agent (a fork server, then forks), seconds on a loaded machine, so
   the latency is set well above that, as a real model's is over a whole suite.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import quiz_agent as quiz
from helpers.model_server import fake_provider

from otel_agent_replay import regress
from otel_agent_replay.store import Store, format_report, open_store, report_rows

_SPENT: dict[str, list[float]] = {"ingest": [], "add_evals": [], "model": []}


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _SPENT[name].append(time.perf_counter() - start)

    return wrapper


def _cases(n: int) -> tuple[str, ...]:
    return tuple(f"c{i:03d}" for i in range(n))


def per_repetition(cases: int, repeat: int, tmp: Path) -> dict[str, float]:
    Store.ingest = _timed("ingest", Store.ingest)  # type: ignore[method-assign]
    Store.add_evals = _timed("add_evals", Store.add_evals)  # type: ignore[method-assign]
    import openai.resources.chat.completions as chat

    chat.Completions.create = _timed("model", chat.Completions.create)  # type: ignore[method-assign]
    db = str(tmp / "evidence.db")
    with fake_provider() as fp:
        names = _cases(cases)
        fp.odds.update({(c, v): 0.8 for c in names for v in ("v1", "v2")})
        suite = quiz.record_suite(tmp / "suite", names, fp.url)
        for key in _SPENT:
            _SPENT[key].clear()
        start = time.perf_counter()
        for agent, version in ((quiz.quiz_v1, "v1"), (quiz.quiz_v2, "v2")):
            regress(suite, agent, agent_version=version, store=db, evaluators=[quiz.right_answer], models="live",
                    repeat=repeat)  # fmt: skip
        total = time.perf_counter() - start
    runs = 2 * cases * repeat
    with open_store(db) as store:
        reps = []
        for _ in range(5):
            start = time.perf_counter()
            report = report_rows(store, compare=("v1", "v2"), cases=True)
            format_report(report, "md")
            reps.append(time.perf_counter() - start)
    assert report.cases is not None and len(report.cases.comparisons) == cases
    return {
        "runs": runs,
        "run_ms": 1000 * total / runs,
        "store_write_ms": 1000 * (sum(_SPENT["ingest"]) + sum(_SPENT["add_evals"])) / runs,
        "model_call_ms": 1000 * statistics.median(_SPENT["model"]),
        "report_ms": 1000 * statistics.median(reps),
        "verdict_ms_per_case": 1000 * statistics.median(reps) / cases,
    }


def workers_ratio(cases: int, repeat: int, latency: float, tmp: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    with fake_provider() as fp:
        names = _cases(cases)
        fp.odds.update({(c, "v1"): 1.0 for c in names})
        fp.latency = latency
        suite = quiz.record_suite(tmp / "wsuite", names, fp.url)
        for workers in (1, 4):
            start = time.perf_counter()
            regress(suite, quiz.quiz_v1, agent_version="v1", store=str(tmp / f"w{workers}.db"), models="live",
                    evaluators=[quiz.right_answer], repeat=repeat, workers=workers)  # fmt: skip
            out[f"workers_{workers}_s"] = time.perf_counter() - start
    out["speedup"] = out["workers_1_s"] / out["workers_4_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer cases and repetitions")
    parser.add_argument("--workers-only", action="store_true", help="only the workers=1 / workers=4 ratio")
    args = parser.parse_args()
    cases, repeat = (10, 10) if args.quick else (20, 20)
    if args.workers_only:
        with tempfile.TemporaryDirectory(prefix="bench-repeat-") as name:
            par = workers_ratio(8, 4, 2.0, Path(name))
        print(f"load {os.getloadavg()[0]:.2f}: workers=1 {par['workers_1_s']:.1f} s, workers=4 "
              f"{par['workers_4_s']:.1f} s, {par['speedup']:.2f}x")  # fmt: skip
        return
    with tempfile.TemporaryDirectory(prefix="bench-repeat-") as name:
        tmp = Path(name)
        os.environ.setdefault(quiz.URL_ENV, "http://127.0.0.1:9")  # replaced by record_suite
        one = per_repetition(cases, repeat, tmp)
        par = workers_ratio(8, 4, 2.0, tmp)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f}; {one['runs']:,} runs ({cases} cases x {repeat} x 2 versions)")
    print("| measure | value |\n|---|---|")
    print(f"| one run of a case, whole (record, replay, agent, model, judge, store) | {one['run_ms']:.1f} ms |")
    print(f"| of which the store's writes (ingest + evaluations) | {one['store_write_ms']:.2f} ms |")
    print(f"| of which the model call (loopback fake provider) | {one['model_call_ms']:.2f} ms |")
    print(f"| verdicts: report with per-case rates, intervals, tests ({cases} cases) | {one['report_ms']:.1f} ms |")
    print(f"| verdicts per case | {one['verdict_ms_per_case']:.2f} ms |")
    overhead = one["store_write_ms"] + one["verdict_ms_per_case"] / repeat
    print(
        f"| store write + verdict share, per repetition | {overhead:.2f} ms "
        f"({overhead / 500:.2%} of a 500 ms model call) |"
    )
    print(f"| 32 runs, model latency 2 s: workers=1 / workers=4 | {par['workers_1_s']:.1f} s / "
          f"{par['workers_4_s']:.1f} s = {par['speedup']:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
