"""The two-version story through the command line: v2 of a small agent regressed against v1's golden set.

v1 is recorded live on six tagged cases (``record(store=)``) and judged (``regress --rescore``);
``golden`` writes its regression set; ``regress`` runs v2, which adds a needless tool call and
drops a confirmation; ``report --compare v1 v2`` shows the out-of-bounds calls and the lower pass
rate, and exits 1 with a threshold; ``--rescore`` under new criteria adds rows and nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from helpers import regress_agent as shop

from otel_agent_replay.cli import main
from otel_agent_replay.store import open_store

TESTS = Path(__file__).resolve().parents[1]
EVALUATORS = [
    "--evaluator", "tool_success", "--evaluator", "no_out_of_bounds", "--evaluator", "helpers.regress_agent:confirmed",
]  # fmt: skip


def test_v2_regresses_against_v1(store_location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = store_location
    with open_store(db) as store:
        v1_ids = shop.record_v1(tmp_path / "v1.jsonl", store)
    assert len(v1_ids) == 6

    assert (
        main(["regress", "--rescore", "--criteria-version", "c1", "--agent-version", "v1", "--db", db, *EVALUATORS])
        == 0
    )
    assert "rescored 6 stored session(s) under criteria c1: 18 evaluation row(s)" in capsys.readouterr().out

    golden = tmp_path / "golden"
    assert main(["golden", "--db", db, "--tag", "orders", "--per-tag", "6", "--out", str(golden)]) == 0
    assert len(list(golden.glob("*.jsonl"))) == 6
    capsys.readouterr()

    shop.RAN.clear()
    argv = ["regress", str(golden), "--agent", "helpers.regress_agent:assistant_v2", "--agent-version", "v2"]
    assert main([*argv, "--db", db, *EVALUATORS, "--criteria-version", "c1"]) == 0
    printed = capsys.readouterr().out
    assert shop.RAN == [], "regress ran nothing for real"
    summary = "regress v2 on 6 recorded session(s) (baseline v1): 0 passed, 6 failed, 5 out-of-bounds call(s), 0 drift"
    assert summary in printed
    assert "out of bounds: lookup_weather" in printed
    assert "missing from the output: confirmation" in printed
    assert "#### `v2` against `v1`" in printed, "regress prints the comparison with the previous version"

    assert main(["report", "--db", db, "--compare", "v1", "v2", "--criteria-version", "c1", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    rows = {r["agent_version"]: r for r in report["rows"]}
    assert rows["v1"]["out_of_bounds_calls"] == 0 and rows["v2"]["out_of_bounds_calls"] == 5
    assert rows["v2"]["out_of_bounds_tools"] == {"lookup_weather": 5}
    assert rows["v2"]["pass_rate"] < rows["v1"]["pass_rate"]
    assert report["comparison"]["metrics"]["pass_rate"]["change"] == "worse"
    assert report["comparison"]["metrics"]["out_of_bounds_calls"]["change"] == "worse"

    threshold = ["report", "--db", db, "--compare", "v1", "v2", "--threshold", "pass_rate=0.05"]
    assert main(threshold) == 1
    assert "❌ **regressed**" in capsys.readouterr().out
    assert main([*threshold[:-1], "pass_rate=0.9"]) == 0  # a loose enough threshold lets it through
    capsys.readouterr()
    assert main(["report", "--db", db, "--compare", "v1", "v2", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("agent_version,sessions,tool_success_rate")

    with open_store(db) as store:
        before = store.counts()
        sessions = store.sessions()
    rescore = ["regress", "--rescore", "--criteria-version", "c2", "--db", db]
    assert main([*rescore, "--evaluator", "helpers.regress_agent:stricter"]) == 0
    with open_store(db) as store:
        after = store.counts()
        assert store.sessions() == sessions, "agent sessions untouched"
        assert after["eval_record"] == before["eval_record"] + 12  # v1's six and v2's six
        assert {k: v for k, v in after.items() if k != "eval_record"} == {
            k: v for k, v in before.items() if k != "eval_record"
        }
        c2 = {e.criteria_version for s in sessions for e in store.evals(s.session_id)}
    assert c2 == {"c1", "c2"}


def test_the_installed_command_regresses_and_exits_1_past_a_threshold(tmp_path: Path) -> None:
    db = tmp_path / "evidence.db"
    with open_store(db) as store:
        shop.record_v1(tmp_path / "v1.jsonl", store)
    script = Path(sys.executable).with_name("otel-agent-replay")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        # From the tests folder, as a user runs it from their project: the agent module is importable from there.
        return subprocess.run([str(script), *args], cwd=TESTS, env=env, capture_output=True, text=True, timeout=120)

    rescored = run("regress", "--rescore", "--criteria-version", "c1", "--db", str(db), *EVALUATORS)
    assert rescored.returncode == 0, rescored.stderr
    golden = tmp_path / "golden"
    assert run("golden", "--db", str(db), "--tag", "orders", "--per-tag", "6", "--out", str(golden)).returncode == 0
    done = run(
        "regress", str(golden), "--agent", "helpers.regress_agent:assistant_v2", "--agent-version", "v2",
        "--db", str(db), *EVALUATORS, "--criteria-version", "c1", "--threshold", "pass_rate=0.05",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "5 out-of-bounds call(s)" in done.stdout and "regressed" in done.stdout
    bad = run("regress", str(golden), "--agent", "helpers.nowhere:agent", "--agent-version", "v3", "--db", str(db))
    assert bad.returncode == 2 and "cannot import 'helpers.nowhere'" in bad.stderr
