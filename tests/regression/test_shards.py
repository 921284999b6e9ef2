"""``regress --shard I/N``: four shards as four processes writing one PostgreSQL store give the same
per-case rates and verdicts as one unsharded run (itself in two worker processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from helpers import quiz_agent as quiz
from helpers.model_server import FakeProvider, fake_provider
from helpers.pg_server import PgServer

TESTS = Path(__file__).resolve().parents[1]
K = 8
ODDS: dict[tuple[str, str], float | str] = {
    ("steady", "v1"): 1.0, ("steady", "v2"): 1.0,
    ("broken", "v1"): 1.0, ("broken", "v2"): 0.0,
    ("mended", "v1"): 0.0, ("mended", "v2"): 1.0,
    ("coin", "v1"): 0.5, ("coin", "v2"): 0.5,
    ("dead", "v1"): 0.0, ("dead", "v2"): 0.0,
}  # fmt: skip


def _command(suite: Path, version: str, db: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "otel_agent_replay.cli", "regress", str(suite),
        "--agent", f"helpers.quiz_agent:quiz_{version}", "--agent-version", version, "--db", db,
        "--evaluator", "helpers.quiz_agent:right_answer", "--models", "live", "--repeat", str(K), "--json", *extra,
    ]  # fmt: skip


def _env(provider: FakeProvider) -> dict[str, str]:
    return {**os.environ, quiz.URL_ENV: provider.url, "PYTHONPATH": str(TESTS)}


def _run_all(commands: list[list[str]], env: dict[str, str]) -> list[dict[str, Any]]:
    """Start every command at once; wait for all; their JSON."""
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()
        outputs.append(orjson.loads(out))
    return outputs


def _verdicts(db: str, env: dict[str, str]) -> dict[str, tuple[str, list[tuple[str, int, int]]]]:
    done = subprocess.run(
        [sys.executable, "-m", "otel_agent_replay.cli", "report", "--db", db, "--compare", "v1", "v2", "--json"],
        env=env, capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    cases = orjson.loads(done.stdout)["cases"]["cases"]
    return {
        orjson.loads(c["input"])["case"]: (
            c["verdict"],
            [(v["version"], v["runs"], v["passes"]) for v in c["versions"]],
        )
        for c in cases
    }


def test_four_shards_in_four_processes_match_one_unsharded_run(pg_server: PgServer, tmp_path: Path) -> None:
    sharded, whole = pg_server.new_database(), pg_server.new_database()
    with fake_provider() as fp:
        fp.odds.update(ODDS)
        suite = quiz.record_suite(tmp_path / "suite", ("steady", "broken", "mended", "coin", "dead"), fp.url)
        env = _env(fp)
        cases_per_shard = []
        for version in ("v1", "v2"):
            outputs = _run_all([_command(suite, version, sharded, "--shard", f"{i}/4") for i in range(1, 5)], env)
            cases_per_shard.append(sorted(len(o["by_case"]) for o in outputs))
            assert [o["shard"] for o in outputs] == ["1/4", "2/4", "3/4", "4/4"]
        split = _verdicts(sharded, env)
    assert cases_per_shard == [[1, 1, 1, 2], [1, 1, 1, 2]], "five cases over four shards, each case once"
    with fake_provider() as fresh:  # the same seeded answers again, from a provider that starts counting anew
        fresh.odds.update(ODDS)
        env = _env(fresh)
        for version in ("v1", "v2"):
            (output,) = _run_all([_command(suite, version, whole, "--workers", "2")], env)
            assert len(output["cases"]) == 5 * K
        assert fresh.max_in_flight >= 1
        unsplit = _verdicts(whole, env)
    assert split == unsplit
    assert {name: verdict for name, (verdict, _) in split.items()} == {
        "steady": "pass", "broken": "regressed", "mended": "fixed", "coin": "flaky", "dead": "fail",
    }  # fmt: skip
    assert all(runs == K for _, rates in split.values() for _, runs, _ in rates)
