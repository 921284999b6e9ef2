"""Repeated live runs per case and a verdict per case between two versions, from real runs: the quiz
agent's model (the fake provider on 127.0.0.1, over the real openai SDK) is right with a seeded
probability set per case and version, the tools are replayed, every run is stored."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers import quiz_agent as quiz
from helpers.model_server import FakeProvider, fake_provider

from otel_agent_replay import ConfigurationError, agent_run, record, regress
from otel_agent_replay.cli import main
from otel_agent_replay.cli._cost import model_price
from otel_agent_replay.store import CaseVerdict, format_report, open_store, report_rows

K = 20
ODDS: dict[tuple[str, str], float | str] = {
    ("steady", "v1"): 1.0, ("steady", "v2"): 1.0,
    ("broken", "v1"): 0.9, ("broken", "v2"): 0.1,
    ("mended", "v1"): 0.1, ("mended", "v2"): 0.9,
    ("coin", "v1"): 0.5, ("coin", "v2"): 0.5,
    ("dead", "v1"): 0.0, ("dead", "v2"): 0.0,
    ("rare", "v1"): 1.0, ("rare", "v2"): 0.0,
}  # fmt: skip
EXPECTED = {
    "steady": CaseVerdict.PASS,
    "broken": CaseVerdict.REGRESSED,
    "mended": CaseVerdict.FIXED,
    "coin": CaseVerdict.FLAKY,
    "dead": CaseVerdict.FAIL,
    "rare": CaseVerdict.UNKNOWN,  # two runs per version: too few to say
}


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with fake_provider() as fp:
        fp.odds.update(ODDS)
        monkeypatch.setenv(quiz.URL_ENV, fp.url)
        yield fp


def _name(text: str | None) -> str:
    """The quiz case of a stored input (``{"case":"broken"}``)."""
    return str(orjson.loads(text or "{}")["case"])


def _regress_both(suite: Path, rare: Path, store: str) -> None:
    for agent, version in ((quiz.quiz_v1, "v1"), (quiz.quiz_v2, "v2")):
        for folder, repeat in ((suite, K), (rare, 2)):
            result = regress(
                folder, agent, agent_version=version, store=store, evaluators=[quiz.right_answer], models="live",
                repeat=repeat,
            )  # fmt: skip
            assert all(c.error is None and c.session_id for c in result.cases), result.failed[:1]
            assert len(result.cases) == repeat * len(result.by_case())


def test_verdicts_from_repeated_live_runs_and_the_fail_on_gate(
    provider: FakeProvider, store_location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = quiz.record_suite(tmp_path / "suite", ("steady", "broken", "mended", "coin", "dead"), provider.url)
    rare = quiz.record_suite(tmp_path / "rare", ("rare",), provider.url)
    _regress_both(suite, rare, store_location)
    assert provider.draws[("broken", "v1")] == K and provider.draws[("rare", "v2")] == 2, "each run asked the model"

    with open_store(store_location) as store:
        runs = [s for s in store.sessions(agent_version="v1") if _name(s.input) == "broken"]
        assert sorted(s.repetition or 0 for s in runs) == list(range(1, K + 1)), "every run has its number"
        assert len({s.case_id for s in runs}) == 1 and runs[0].case_id != runs[0].session_id
        report = report_rows(store, compare=("v1", "v2"))
    assert report.cases is not None
    verdicts = {_name(c.baseline.input or c.candidate.input): c.verdict for c in report.cases.comparisons}
    assert verdicts == EXPECTED
    broken = next(c for c in report.cases.comparisons if c.verdict == CaseVerdict.REGRESSED)
    assert broken.baseline.runs == broken.candidate.runs == K
    assert broken.baseline.passes > broken.candidate.passes and broken.p_value is not None and broken.p_value < 0.05
    assert broken.candidate.low is not None and broken.candidate.high is not None
    assert broken.candidate.low <= (broken.candidate.rate or 0) <= broken.candidate.high
    assert len(broken.candidate.failed_repetitions) == K - broken.candidate.passes

    # The CI gate: exit 1 naming the regressed case; --json carries per-case rates with intervals.
    code = main(["report", "--db", store_location, "--compare", "v1", "v2", "--fail-on", "regressed", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    assert broken.case_id in captured.err and "--fail-on regressed" in captured.err
    data = orjson.loads(captured.out)["cases"]
    assert data["test"] == "Fisher's exact test, two-sided" and data["alpha"] == 0.05
    assert data["interval"] == "Wilson score interval" and data["verdicts"]["regressed"] == 1
    by_name = {_name(c["input"]): c for c in data["cases"]}
    assert by_name["broken"]["verdict"] == "regressed"
    v2 = next(v for v in by_name["broken"]["versions"] if v["version"] == "v2")
    assert v2["runs"] == K and v2["passes"] == broken.candidate.passes
    assert v2["interval"] == [broken.candidate.low, broken.candidate.high]
    spend = {s["version"]: s for s in data["spend"]}
    assert spend["v1"]["runs"] == 5 * K + 2 and spend["v1"]["tokens_in"] == 12 * (5 * K + 2)
    # gpt-4o-mini's price from genai-prices: 12 tokens in and 7 out per run
    assert spend["v1"]["cost_usd"] == pytest.approx(model_price(quiz.MODEL, 12 * (5 * K + 2), 7 * (5 * K + 2)))
    assert spend["v1"]["cost_usd"] > 0 and spend["v1"]["unpriced_models"] == []

    with open_store(store_location) as store:
        text = format_report(report_rows(store, compare=("v1", "v2")), "md")
        csv_text = format_report(report_rows(store, compare=("v1", "v2")), "csv")
    assert "❌ **regressed**" in text and "✅ **fixed**" in text and "⚠️ flaky" in text and "| unknown |" in text
    assert f"{broken.case_id},v2,{K},{broken.candidate.passes}," in csv_text and ",regressed" in csv_text

    # Without the regressed case the gate is open: v2 is run again on it, now as good as v1.
    provider.odds[("broken", "v2")] = 0.9
    regress(
        suite / "broken.jsonl", quiz.quiz_v2, agent_version="v2", store=store_location,
        evaluators=[quiz.right_answer], models="live", repeat=K,
    )  # fmt: skip
    code = main(["report", "--db", store_location, "--compare", "v1", "v2", "--fail-on", "regressed", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    again = {_name(c["input"]): c for c in orjson.loads(captured.out)["cases"]["cases"]}
    assert again["broken"]["verdict"] in ("pass", "flaky")
    assert next(v for v in again["broken"]["versions"] if v["version"] == "v2")["runs"] == K, "replaced, not added"


def test_workers_run_the_repetitions_in_parallel_processes(provider: FakeProvider, tmp_path: Path) -> None:
    suite = quiz.record_suite(tmp_path / "suite", ("steady", "dead"), provider.url)
    provider.latency = 0.3
    store = str(tmp_path / "evidence.db")
    # no models=: with repeat above 1 the model runs live by default
    result = regress(
        suite, quiz.quiz_v1, agent_version="v1", store=store, evaluators=[quiz.right_answer], repeat=3, workers=3
    )
    assert provider.draws == {("steady", "v1"): 3, ("dead", "v1"): 3}
    assert provider.max_in_flight > 1, "model calls overlapped: the runs ran in several processes"
    assert [(c.runs, c.passes) for c in result.by_case()] == [(3, 0), (3, 3)]  # dead, steady (tapes by name)
    with open_store(store) as db:
        stored = db.sessions(agent_version="v1")
    assert sorted((_name(s.input), s.repetition) for s in stored) == [
        (case, n) for case in ("dead", "steady") for n in (1, 2, 3)
    ]


def test_workers_take_the_callers_environment_not_the_fork_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """multiprocessing's fork server is started once per process and keeps the environment of its start: here a
    block's forkserver child starts it (or it runs since an earlier test) before the provider's address is set."""
    monkeypatch.delenv(quiz.URL_ENV, raising=False)
    with record(tmp_path / "block.jsonl"), agent_run("block"):
        child = multiprocessing.get_context("forkserver").Process(target=os.getpid)
        child.start()
        child.join(60)
    assert child.exitcode == 0
    with fake_provider() as fp:
        fp.odds.update(ODDS)
        monkeypatch.setenv(quiz.URL_ENV, fp.url)
        suite = quiz.record_suite(tmp_path / "suite", ("steady",), fp.url)
        result = regress(suite, quiz.quiz_v1, agent_version="v1", store=str(tmp_path / "e.db"), repeat=2, workers=2)
        assert [c.error for c in result.cases] == [None, None]
        assert fp.draws == {("steady", "v1"): 2}  # the workers reached the provider named after the server started


def test_workers_need_agents_they_can_pickle(provider: FakeProvider, tmp_path: Path) -> None:
    suite = quiz.record_suite(tmp_path / "suite", ("steady",), provider.url)
    with pytest.raises(ConfigurationError, match=r"cannot be pickled.*module-level functions"):
        regress(suite, lambda case: quiz.quiz_v1(case), agent_version="v1", store=str(tmp_path / "e.db"), workers=2)
