"""Verdicts in a default install: a fresh virtual environment with the project alone (no extras, so no SciPy)
runs ``regress --repeat`` on two versions and ``report --compare``, and gets per-case verdicts.

The environment is made once per test session (``pip install -e`` of the exporter and the project, from
pip's cache); the agent in it has no SDK: it asks the fake provider over ``urllib`` (the standard
library's ``http.client``, captured like any client) and uses a read-only tool.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers.model_server import FakeProvider, fake_provider

ROOT = Path(__file__).resolve().parents[2]
AGENT = '''
"""An agent with no SDK: a read-only tool, then a quiz question to the model over urllib."""
import json
import os
import urllib.request

from otel_agent_replay import agent_run, tool
from otel_agent_replay.store import Evaluation


@tool(side_effect="read_only")
def weather(city: str) -> str:
    return f"sunny in {city}"


def _ask(case, version):
    sky = weather("Oslo")
    question = {"role": "user", "content": f"quiz case={case} version={version}: {sky}?"}
    body = {"model": "gpt-4o-mini", "messages": [question]}
    request = urllib.request.Request(
        os.environ["TINY_URL"] + "/v1/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test-tiny"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return {"answer": json.load(response)["choices"][0]["message"]["content"]}


@agent_run("tiny", agent_version="v0")
def tiny_v0(case):
    return _ask(case, "v0")


@agent_run("tiny", agent_version="v1")
def tiny_v1(case):
    return _ask(case, "v1")


@agent_run("tiny", agent_version="v2")
def tiny_v2(case):
    return _ask(case, "v2")


def right_answer(view):
    output = view.final_output if isinstance(view.final_output, dict) else {}
    return Evaluation("right_answer", passed=output.get("answer") == "right")
'''
RECORD = """
import sys
from pathlib import Path
from otel_agent_replay import record
import tiny_agent
suite = Path(sys.argv[1])
suite.mkdir()
for case in ("same", "worse"):
    with record(suite / f"{case}.jsonl"):
        tiny_agent.tiny_v0(case)
"""
K = 8


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the project alone, its python (made once per session)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    exporter = ROOT / "exporters" / "opentelemetry-exporter-agent-replay-tape"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-e", str(exporter), "-e", str(ROOT)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return python


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with fake_provider() as fp:
        fp.odds.update({("same", v): 1.0 for v in ("v0", "v1", "v2")})
        fp.odds.update({("worse", "v0"): 1.0, ("worse", "v1"): 1.0, ("worse", "v2"): 0.1})
        yield fp


def test_regress_repeat_and_report_compare_give_verdicts_without_scipy(
    bare_python: Path, provider: FakeProvider, tmp_path: Path
) -> None:
    (tmp_path / "tiny_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TINY_URL"] = provider.url

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bare_python), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
        )

    assert run("-c", "import scipy").returncode != 0, "the fresh venv has no SciPy"
    assert run("-c", RECORD, "suite").returncode == 0
    db = str(tmp_path / "evidence.db")
    for version in ("v1", "v2"):
        done = run(
            "-m", "otel_agent_replay.cli", "regress", "suite", "--agent", f"tiny_agent:tiny_{version}",
            "--agent-version", version, "--db", db, "--evaluator", "tiny_agent:right_answer", "--repeat", str(K),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert version == "v2" or done.stdout.count(f"{K}/{K} passed") == 2, done.stdout
    assert "the recorded runs' version v0 has no sessions in the store" in " ".join(done.stdout.split())
    report = run("-m", "otel_agent_replay.cli", "report", "--db", db, "--compare", "v1", "v2", "--json")
    assert report.returncode in (0, 1), report.stderr
    cases = orjson.loads(report.stdout)["cases"]
    verdicts = {orjson.loads(c["input"])["case"]: c for c in cases["cases"]}
    assert verdicts["same"]["verdict"] == "pass"
    assert verdicts["worse"]["verdict"] == "regressed" and verdicts["worse"]["p_value"] < 0.05
    assert cases["test"] == "Fisher's exact test, two-sided"
    assert "regressed" in orjson.loads(report.stdout)["headline"]
    gate = run("-m", "otel_agent_replay.cli", "report", "--db", db, "--compare", "v1", "v2", "--fail-on", "regressed")
    assert gate.returncode == 1, gate.stderr
    assert "1 regressed" in gate.stdout and "interval" in gate.stdout
    assert provider.draws[("worse", "v2")] == K, "each repetition asked the model"
