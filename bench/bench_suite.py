"""What the package costs a user's pytest run and command line, beside pytest-recording (issue 20).

Run it as a script, after ``bash bench/suite/setup.sh`` (once)::

    .venv/bin/python bench/bench_suite.py                  # about 10 minutes on 2 cores
    .venv/bin/python bench/bench_suite.py --quick          # fewer repetitions
    .venv/bin/python bench/bench_suite.py --source DIR     # measure another checkout (e.g. main, for "before")
    .venv/bin/python bench/bench_suite.py --only suite --shared-client   # the agent's client built once

Everything runs in the suite virtual environment
(``${AGENT_REPLAY_SUITE_VENV:-~/.cache/otel-agent-replay/suite}``: pytest, the openai SDK,
pytest-recording and vcrpy), into which this script installs the two distributions of ``--source``
as wheels, not editable, as a user's CI installs them: pytest then marks the distribution that
registers the plugin for assertion rewriting, as it does there. Every pytest run has
``PYTHONDONTWRITEBYTECODE=1`` (nothing cached between runs, as in many CI images) and
``-p no:cacheprovider``. Three measurements, each process timed from outside (wall clock) and by
its own CPU time (user + system, from ``wait4``), the configurations interleaved round by round:

1. The replay suite. One generated project, an openai-SDK agent (two ``chat.completions.create``
   calls around one tool call) and 500 tests, 10 a module, each asking another question. Ours: the
   tool is ``@tool``, each test uses the ``agent_tape`` fixture and runs the agent in
   ``agent_run``; pytest-recording's: the same agent without our decorator, each test
   ``@pytest.mark.vcr``. Both record once (``--agent-record-mode=once`` / ``--record-mode=once``)
   against a fake OpenAI provider on 127.0.0.1 (``tests/helpers/model_server.py``), then replay
   with the provider stopped: 50 tests (the first five modules) and all 500. Ours runs with
   ``-p no:recording``, theirs with ``-p no:otel_agent_replay``: each as its only user has it.
   Ours replays the tool as well; theirs runs it (a dict literal).
2. The plugin's fixed cost. A project of 50 trivial tests that uses no plugin: pytest as installed,
   with ``-p no:otel_agent_replay``, and with ``-p no:recording``.
3. The command's start: ``python -c pass``, ``otel-agent-replay --version``, ``--help``, and
   ``show`` of one of the suite's tapes (two model steps and a tool step).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.model_server import fake_provider

REPO = Path(__file__).resolve().parent.parent

VENV = Path(os.environ.get("AGENT_REPLAY_SUITE_VENV") or Path.home() / ".cache/otel-agent-replay/suite")
PER_MODULE = 10

AGENT = '''
"""A support agent on the openai SDK: the model asks for a tool, the tool answers, the model concludes."""
import json
import os

import openai
{import_tool}
TOOLS = [
    {{
        "type": "function",
        "function": {{
            "name": "order_status",
            "description": "Where an order is",
            "parameters": {{
                "type": "object",
                "properties": {{"order_id": {{"type": "string"}}}},
                "required": ["order_id"],
            }},
        }},
    }}
]

{decorator}
def order_status(order_id: str) -> dict:
    return {{"order_id": order_id, "status": "shipped", "eta_days": 2}}


{client_at_import}
def run_agent(question: str) -> str:
    client = {client}
    messages = [{{"role": "user", "content": question}}]
    first = client.chat.completions.create(model="gpt-bench", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    result = order_status(**json.loads(call.function.arguments))
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({{"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}})
    second = client.chat.completions.create(model="gpt-bench", messages=messages, tools=TOOLS)
    return second.choices[0].message.content or ""
'''

OURS_TEST = """
def test_q{n}(agent_tape):
    with agent_run("support"):
        assert "shipped" in run_agent("Where is order {n}?")
"""
VCR_TEST = """
@pytest.mark.vcr
def test_q{n}():
    assert "shipped" in run_agent("Where is order {n}?")
"""
PLAIN_TEST = """
def test_plain_{n}():
    assert sum(range({n})) == {n} * ({n} - 1) // 2
"""


def _python() -> Path:
    return VENV / "bin" / "python"


def install(source: Path, work: Path) -> str:
    """Build the two distributions of ``source`` as wheels and install them into the suite venv."""
    wheels = work / "wheels"
    exporter = source / "exporters" / "opentelemetry-exporter-agent-replay-tape"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source), str(exporter)],
        check=True,
        cwd=work,
    )
    built = sorted(str(p) for p in wheels.glob("*.whl"))
    pip = [str(_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--find-links", str(wheels), *built], check=True)  # their dependencies, once
    subprocess.run([*pip, "--force-reinstall", "--no-deps", *built], check=True)  # this source's code
    return ", ".join(Path(b).name for b in built)


_NEW_CLIENT = 'openai.OpenAI(base_url=os.environ["BENCH_OPENAI_URL"], api_key="bench-key", max_retries=0)'


def make_suite(root: Path, kind: str, tests: int, shared_client: bool = False) -> Path:
    """A generated project: ``ours``, ``vcr`` or ``plain``; the agent builds its client per run, or once at
    import with ``shared_client``."""
    clients = (
        {"client_at_import": f"CLIENT = {_NEW_CLIENT}\n\n", "client": "CLIENT"}
        if shared_client
        else {"client_at_import": "", "client": _NEW_CLIENT}
    )
    project = root / kind
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    if kind == "ours":
        agent = AGENT.format(
            import_tool="\nfrom otel_agent_replay import tool\n", decorator='@tool(side_effect="read_only")', **clients
        )
        head, body = "from agent import run_agent\nfrom otel_agent_replay import agent_run\n", OURS_TEST
    elif kind == "vcr":
        agent = AGENT.format(import_tool="", decorator="", **clients)
        head, body = "import pytest\nfrom agent import run_agent\n", VCR_TEST
    else:
        agent, head, body = "", "", PLAIN_TEST
    (project / "agent.py").write_text(textwrap.dedent(agent))
    for module in range(tests // PER_MODULE):
        numbers = range(module * PER_MODULE, (module + 1) * PER_MODULE)
        text = head + "".join(body.format(n=n) for n in numbers)
        (project / "tests" / f"test_m{module:03d}.py").write_text(text)
    return project


def env(url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OTEL_", "PYTHON"))}
    return {**keep, "PYTHONDONTWRITEBYTECODE": "1", "BENCH_OPENAI_URL": url, "OTEL_SDK_DISABLED": "false"}


def timed(cmd: Sequence[str], cwd: Path, environment: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit status) of one process, its output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stderr is not None:
        proc.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def pytest_cmd(*args: str) -> list[str]:
    return [str(_python()), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def check(cmd: Sequence[str], cwd: Path, environment: dict[str, str], expect: str) -> None:
    done = subprocess.run(cmd, cwd=cwd, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0 or expect not in done.stdout:
        raise SystemExit(f"{' '.join(cmd)} in {cwd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")


def rounds(cases: dict[str, tuple[list[str], Path, dict[str, str]]], reps: int) -> dict[str, dict[str, Any]]:
    """Run every case once per round, in a rotating order; medians and spreads of wall and CPU time."""
    walls: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for rep in range(reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            cmd, cwd, environment = cases[name]
            wall, cpu, code = timed(cmd, cwd, environment)
            if code != 0:
                raise SystemExit(f"{name}: exit {code} ({' '.join(cmd)})")
            walls[name].append(wall)
            cpus[name].append(cpu)
        print(f"  round {rep + 1}/{reps} done", file=sys.stderr, flush=True)
    return {
        name: {
            "wall_s": statistics.median(walls[name]),
            "cpu_s": statistics.median(cpus[name]),
            "wall_min_s": min(walls[name]),
            "cpu_min_s": min(cpus[name]),
            "wall_range": [min(walls[name]), max(walls[name])],
            "cpu_range": [min(cpus[name]), max(cpus[name])],
            "cpu_samples": cpus[name],
        }
        for name in names
    }


def paired(found: dict[str, Any], mine: str, other: str) -> dict[str, float]:
    """Round by round, ``mine``'s CPU seconds less (``diff``) and over (``ratio``) ``other``'s, run in the
    same round: the median and the spread. Pairing cancels what a round shares (the machine's load then)."""
    diffs = [a - b for a, b in zip(found[mine]["cpu_samples"], found[other]["cpu_samples"], strict=True)]
    ratios = [a / b for a, b in zip(found[mine]["cpu_samples"], found[other]["cpu_samples"], strict=True)]
    return {
        "diff_ms": statistics.median(diffs) * 1000,
        "diff_range_ms": [min(diffs) * 1000, max(diffs) * 1000],
        "ratio": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
    }


def suite(root: Path, reps: int, tests: int, shared_client: bool = False) -> dict[str, Any]:
    ours, vcr = make_suite(root, "ours", tests, shared_client), make_suite(root, "vcr", tests, shared_client)
    with fake_provider() as provider:
        url = provider.openai_url
        print(f"recording {tests} tapes and {tests} cassettes from {url} …", file=sys.stderr, flush=True)
        check(pytest_cmd("-p", "no:recording", "--agent-record-mode=once"), ours, env(url), f"{tests} passed")
        check(pytest_cmd("-p", "no:otel_agent_replay", "--record-mode=once"), vcr, env(url), f"{tests} passed")
        recorded = len(provider.requests)
    small = [f"tests/test_m{m:03d}.py" for m in range(50 // PER_MODULE)]
    check(pytest_cmd("-p", "no:recording"), ours, env(url), f"{tests} passed")  # replayed, provider stopped
    check(pytest_cmd("-p", "no:otel_agent_replay"), vcr, env(url), f"{tests} passed")
    cases = {
        "ours_50": (pytest_cmd("-p", "no:recording", *small), ours, env(url)),  # the same tests' first 50
        "vcr_50": (pytest_cmd("-p", "no:otel_agent_replay", *small), vcr, env(url)),
        f"ours_{tests}": (pytest_cmd("-p", "no:recording"), ours, env(url)),
        f"vcr_{tests}": (pytest_cmd("-p", "no:otel_agent_replay"), vcr, env(url)),
    }
    print(f"replay suites, {reps} rounds …", file=sys.stderr, flush=True)
    found = rounds(cases, reps)
    for who in ("ours", "vcr"):
        extra = tests - 50
        found[f"{who}_per_test_ms"] = {
            "cpu": (found[f"{who}_{tests}"]["cpu_s"] - found[f"{who}_50"]["cpu_s"]) / extra * 1000,
            "wall": (found[f"{who}_{tests}"]["wall_s"] - found[f"{who}_50"]["wall_s"]) / extra * 1000,
        }
    found["paired_500"] = paired(found, f"ours_{tests}", f"vcr_{tests}")
    found["paired_50"] = paired(found, "ours_50", "vcr_50")
    found["model_calls_recorded"] = recorded
    found["tests"] = tests
    found["tape"] = str(next((ours / "tests" / "tapes").rglob("*.jsonl")))
    return found


def fixed_cost(root: Path, reps: int) -> dict[str, Any]:
    plain = make_suite(root, "plain", 50)
    environment = env("http://127.0.0.1:9/v1")
    check(pytest_cmd(), plain, environment, "50 passed")
    cases = {
        "installed": (pytest_cmd(), plain, environment),
        "no_ours": (pytest_cmd("-p", "no:otel_agent_replay"), plain, environment),
        "no_recording": (pytest_cmd("-p", "no:recording"), plain, environment),
        "neither": (pytest_cmd("-p", "no:otel_agent_replay", "-p", "no:recording"), plain, environment),
    }
    print(f"plugin fixed cost, {reps} rounds …", file=sys.stderr, flush=True)
    found = rounds(cases, reps)
    found["ours_paired"] = paired(found, "installed", "no_ours")  # ours' cost, pytest-recording on in both
    found["ours_paired_alone"] = paired(found, "no_recording", "neither")  # ours' cost, pytest-recording off
    found["recording_paired"] = paired(found, "installed", "no_recording")  # pytest-recording's, for scale
    return found


def cli_start(root: Path, tape: str, reps: int) -> dict[str, Any]:
    environment = env("http://127.0.0.1:9/v1")
    script = str(VENV / "bin" / "otel-agent-replay")
    check([script, "show", tape], root, environment, "run ")
    cases = {
        "bare": ([str(_python()), "-c", "pass"], root, environment),
        "version": ([script, "--version"], root, environment),
        "help": ([script, "--help"], root, environment),
        "show": ([script, "show", tape], root, environment),
    }
    print(f"command start, {reps} rounds …", file=sys.stderr, flush=True)
    found = rounds(cases, reps)
    for name in ("version", "help", "show"):
        found[f"{name}_paired"] = paired(found, name, "bare")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--rounds", type=int, help="rounds of every part (default: 5, 15, 21; --quick 3, 7, 11)")
    parser.add_argument("--tests", type=int, default=500, help="the large suite's size (default 500)")
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout to install (default: this one)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--only", choices=("suite", "fixed", "cli"), action="append", help="run only these parts")
    parser.add_argument(
        "--shared-client",
        action="store_true",
        help="the suite's agent builds its OpenAI client once, at import (default: once per run, in the test)",
    )
    args = parser.parse_args(argv)
    if not (VENV / ".installed").exists():
        print(f"no suite venv at {VENV}: run bash bench/suite/setup.sh first", file=sys.stderr)
        return 2
    parts = args.only or ["suite", "fixed", "cli"]
    work = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    started = datetime.now(timezone.utc)
    try:
        wheels = install(args.source.resolve(), work)
        report: dict[str, Any] = {
            "started": f"{started:%Y-%m-%d %H:%M:%S} UTC",
            "source": str(args.source),
            "wheels": wheels,
            "python": platform.python_version(),
            "load_at_start": os.getloadavg()[0],
        }
        tape = ""
        if "suite" in parts:
            report["suite"] = suite(work, args.rounds or (3 if args.quick else 5), args.tests, args.shared_client)
            report["suite"]["shared_client"] = args.shared_client
            tape = report["suite"]["tape"]
        if "fixed" in parts:
            report["fixed"] = fixed_cost(work, args.rounds or (7 if args.quick else 15))
        if "cli" in parts:
            if not tape:
                with fake_provider() as provider:
                    ours = make_suite(work, "ours", PER_MODULE)
                    check(pytest_cmd("--agent-record-mode=once"), ours, env(provider.openai_url), "passed")
                tape = str(next((ours / "tests" / "tapes").rglob("*.jsonl")))
            report["cli"] = cli_start(work, tape, args.rounds or (11 if args.quick else 21))
        report["load_at_end"] = os.getloadavg()[0]
        report["finished"] = f"{datetime.now(timezone.utc):%H:%M:%S} UTC"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    else:
        print(text)
    summary(report)
    return 0


def summary(report: dict[str, Any]) -> None:
    """The three targets of issue 20, from this run (CPU time; paired per round, median [spread])."""
    load = f"load {report['load_at_start']:.2f} → {report['load_at_end']:.2f}"
    print(f"\n{report['started']} – {report['finished']}, {load}")
    if "suite" in report:
        found = report["suite"]
        for size in ("50", str(found["tests"])):
            mine, theirs, pair = found[f"ours_{size}"], found[f"vcr_{size}"], found[f"paired_{size}"]
            print(
                f"  {size} tests: ours {mine['cpu_s']:.2f} s, pytest-recording {theirs['cpu_s']:.2f} s CPU; "
                f"ours/theirs {pair['ratio']:.2f}x [{pair['ratio_range'][0]:.2f}–{pair['ratio_range'][1]:.2f}] "
                "(target ≤ 0.8x)"
            )
        print(
            f"  per extra test: ours {found['ours_per_test_ms']['cpu']:.1f} ms, "
            f"pytest-recording {found['vcr_per_test_ms']['cpu']:.1f} ms CPU"
        )
    if "fixed" in report:
        for key, what in (
            ("ours_paired", "the plugin's fixed cost (installed − -p no:otel_agent_replay)"),
            ("ours_paired_alone", "the same, pytest-recording off"),
            ("recording_paired", "pytest-recording's own, for scale"),
        ):
            pair = report["fixed"][key]
            low, high = pair["diff_range_ms"]
            print(f"  {what}: {pair['diff_ms']:+.0f} ms [{low:+.0f} … {high:+.0f}] (target ≤ 50 ms)")
    if "cli" in report:
        for name in ("version", "help", "show"):
            pair = report["cli"][f"{name}_paired"]
            print(f"  otel-agent-replay {name}: {pair['diff_ms']:+.0f} ms CPU over a bare start (--version: ≤ 60 ms)")


if __name__ == "__main__":
    raise SystemExit(main())
