"""Repetitions judged on outcomes, from real runs: an openai tool-loop agent with a read-only tool and a
write tool whose argument is what the model said, against the fake provider answering at random with
seeded probabilities; ``regress --repeat 12 --models live`` on two versions from the command line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers import notes_agent as notes
from helpers.model_server import FakeProvider, fake_provider

from otel_agent_replay.cli import main
from otel_agent_replay.store import CaseVerdict, open_store, report_rows

K = 12
ODDS: dict[tuple[str, str], float | str] = {
    ("same", "v0"): 1.0, ("same", "v1"): 1.0, ("same", "v2"): 1.0,
    ("worse", "v0"): 1.0, ("worse", "v1"): 0.85, ("worse", "v2"): 0.1,
}  # fmt: skip


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with fake_provider() as fp:
        fp.odds.update(ODDS)
        monkeypatch.setenv(notes.URL_ENV, fp.url)
        yield fp


def _case(text: str | None) -> str:
    return str(orjson.loads(text or "{}")["case"])


def test_repetitions_are_judged_on_outcomes_not_on_the_write_tools_arguments(
    provider: FakeProvider, store_location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = notes.record_suite(tmp_path / "suite", ("same", "worse"), provider.url)
    notes.SAVED.clear()
    judge = "helpers.notes_agent:right_answer"
    for version in ("v1", "v2"):
        argv = ["regress", str(suite), "--agent", f"helpers.notes_agent:notes_{version}", "--agent-version", version]
        argv += ["--db", store_location, "--evaluator", judge, "--repeat", str(K), "--models", "live", "--json"]
        assert main(argv) == 0
        result = orjson.loads(capsys.readouterr().out)
        assert result["runs"]["error"] == 0 and len(result["cases"]) == 2 * K
        for run in result["cases"]:
            assert run["error"] is None, run["error"]  # never a TapeDrift: the write tool's argument may differ
            (judged,) = run["evaluations"]
            assert run["passed"] is judged["passed"], "the pass or fail is the evaluator's"
        drifted = [r for r in result["cases"] if r["drift"]]
        assert drifted and all(not r["passed"] for r in drifted), "each wrong answer drifted save_note's text"
        assert all(r["divergences"] >= r["drift"] for r in result["cases"])
    assert notes.SAVED == [], "the write tool never ran"
    assert provider.draws[("worse", "v1")] == provider.draws[("worse", "v2")] == K, "every run asked the model"

    with open_store(store_location) as store:
        report = report_rows(store, compare=("v1", "v2"))
    assert report.cases is not None
    verdicts = {_case(c.baseline.input): c for c in report.cases.comparisons}
    assert verdicts["same"].verdict == CaseVerdict.PASS
    assert verdicts["worse"].verdict == CaseVerdict.REGRESSED
    assert verdicts["worse"].candidate.divergences > verdicts["worse"].baseline.divergences > 0
    assert verdicts["same"].candidate.divergences == 0

    worse = verdicts["worse"]
    assert worse.p_value is not None
    named = (
        f"v2 against v1: 1 regressed: {worse.case_id[:12]}… {worse.baseline.input} "
        f"{worse.baseline.rate:.0%} ({worse.baseline.passes}/{K}) → {worse.candidate.rate:.0%} "
        f"({worse.candidate.passes}/{K}), p = {worse.p_value:.2g}; 1 pass"
    )
    assert report.headline() == named, "the headline names the regressed case with its rates and p-value"
    assert main(["report", "--db", store_location, "--compare", "v1", "v2"]) == 0
    markdown = capsys.readouterr().out
    assert "mixed" not in markdown
    assert markdown.splitlines()[2].startswith(f"**`v2` against `v1`: ❌ 1 regressed: `{worse.case_id[:12]}…`")
    assert main(["report", "--db", store_location, "--compare", "v1", "v2", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["headline"] == named


@pytest.mark.parametrize("broken", ["lost_key", "says_nothing", "says_empty"])
def test_a_judge_that_raises_or_returns_nothing_is_an_error_never_a_pass(
    broken: str, provider: FakeProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = notes.record_suite(tmp_path / "suite", ("same",), provider.url)
    db = str(tmp_path / "evidence.db")

    def regress_cli(version: str, judge: str, *more: str) -> int:
        argv = ["regress", str(suite), "--agent", f"helpers.notes_agent:notes_{version}", "--agent-version", version]
        return main([*argv, "--db", db, "--evaluator", f"helpers.notes_agent:{judge}", "--repeat", "5", *more])

    assert regress_cli("v1", "right_answer", "--json") == 0
    capsys.readouterr()
    assert regress_cli("v2", broken, "--fail-on", "error", "--baseline", "v1") == 1
    printed = capsys.readouterr()
    assert "of 5 run(s) 0 passed, 0 failed, 5 error (not judged)" in printed.out
    assert f"error: evaluator helpers.notes_agent:{broken}" in printed.out
    assert "--fail-on error:" in printed.err and "1 case(s)" in printed.err

    assert main(["report", "--db", db, "--compare", "v1", "v2", "--fail-on", "regressed"]) == 0
    assert "1 case(s) could not be judged" in capsys.readouterr().err, "an error is never silently a pass"
    assert main(["report", "--db", db, "--compare", "v1", "v2", "--json"]) == 0
    (case,) = orjson.loads(capsys.readouterr().out)["cases"]["cases"]
    assert case["verdict"] == "error", "never pass"
    candidate = next(v for v in case["versions"] if v["version"] == "v2")
    assert candidate["errors"] == 5 and candidate["runs"] == 0 and candidate["judge_errors"]
    assert main(["report", "--db", db, "--compare", "v1", "v2", "--fail-on", "error"]) == 1
    assert "error" in capsys.readouterr().out
