"""What one replayed test of ``bench_suite.py --shared-client`` costs ours, piece by piece, in one process (issue 34).

Run it after ``bash bench/suite/setup.sh`` (once)::

    .venv/bin/python bench/profile_suite_test.py              # 100 tests, 3 rounds
    .venv/bin/python bench/profile_suite_test.py --tests 200

It generates the shared-client project of ``bench_suite.py`` (the agent's ``OpenAI`` client built once, at
import), records its tapes against the fake provider, then, in the suite venv with this checkout first on
``PYTHONPATH``, times per test (CPU, ``process_time``, median over tests and rounds): ``load_tape`` of the
test's tape, ``replay()`` entered on the parsed tape, the agent's run (its two replayed model calls and the
replayed tool), ``replay()`` left; then, once per process, what a suite pays before its first test: importing
the plugin's body and building the secret detector (Kingfisher), and per entry the counted guards and the
capture points' activation. No pytest runs in the timed part: the difference to ``bench_suite.py``'s
per-test figure is pytest's, the plugin's fixture and its tape lock.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parent.parent

MEASURE = r"""
import statistics, sys, time
from pathlib import Path

t0 = time.process_time()
import openai, httpx  # noqa: F401  (the SDK's own import, both suites pay it)
t1 = time.process_time()
import otel_agent_replay.pytest_plugin._plugin  # noqa: F401  (what the fixture's first use imports)
t2 = time.process_time()
from otel_agent_replay.capture._detector import DETECTOR
DETECTOR.known_tokens("a text of more than sixteen characters")
t3 = time.process_time()
print(f"once per process: openai+httpx import {(t1 - t0) * 1e3:.0f} ms, our plugin's body {(t2 - t1) * 1e3:.0f} ms, "
      f"the secret detector's build {(t3 - t2) * 1e3:.0f} ms CPU")

project, rounds = Path(sys.argv[1]), int(sys.argv[2])
sys.path.insert(0, str(project))
import agent
from otel_agent_replay import agent_run, replay
from otel_agent_replay.core import project_settings
from otel_agent_replay.integrations import activate
from otel_agent_replay.seal import _children, _network, _trust
from otel_agent_replay.tape import load_tape

tapes = sorted((project / "tests" / "tapes").rglob("*.jsonl"))
def question(path):
    return f"Where is order {int(path.stem.split('q')[-1])}?"
for path in tapes[:3]:  # warm: the first replay patches what it patches once per process
    with replay(path), agent_run("support"):
        agent.run_agent(question(path))
rows = {"load_tape": [], "replay() entered": [], "the agent's run": [], "replay() left": [], "in all": []}
for _ in range(rounds):
    for path in tapes:
        a = time.process_time()
        tape = load_tape(path)
        b = time.process_time()
        block = replay(tape)
        block.__enter__()
        c = time.process_time()
        with agent_run("support"):
            assert "shipped" in agent.run_agent(question(path))
        d = time.process_time()
        block.__exit__(None, None, None)
        e = time.process_time()
        for key, value in zip(rows, (b - a, c - b, d - c, e - d, e - a)):
            rows[key].append(value * 1e6)
print(f"per test, median of {len(tapes)} tests x {rounds} rounds (CPU µs):")
for key, values in rows.items():
    print(f"  {key:18s} {statistics.median(values):8.0f}   [{min(values):.0f} … {max(values):.0f}]")

def each(what, body, times=2000):
    body()
    start = time.process_time()
    for _ in range(times):
        body()
    print(f"  {what:44s} {(time.process_time() - start) / times * 1e6:6.1f} µs")

print("inside replay() entered and left, each alone (CPU µs a call):")
each("network guard installed and uninstalled", lambda: (_network.install(), _network.uninstall()))
each("trust-store deferral installed and uninstalled", lambda: (_trust.install(), _trust.uninstall()))
each("process watch installed and uninstalled", lambda: (_children.install(), _children.uninstall()))
each("capture points activated and closed", lambda: activate(()).close())
each("project_settings() (once a test: replay()'s start)", project_settings)
"""


def main(argv: list[str] | None = None) -> int:
    import bench_suite as suite

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not (suite.VENV / ".installed").exists():
        print(f"no suite venv at {suite.VENV}: run bash bench/suite/setup.sh first", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="profile-suite-"))
    try:
        ours = suite.make_suite(work, "ours", args.tests, shared_client=True)
        exporter = REPO / "exporters" / "opentelemetry-exporter-agent-replay-tape" / "src"
        path = os.pathsep.join((str(REPO), str(exporter)))
        with suite.fake_provider() as provider:
            environment = {**suite.env(provider.openai_url), "PYTHONPATH": path}
            suite.check(suite.pytest_cmd("-p", "no:recording", "--agent-record-mode=once"), ours, environment, "passed")
        environment = {**suite.env("http://127.0.0.1:9/v1"), "PYTHONPATH": path}  # the provider is gone
        print(f"load {os.getloadavg()[0]:.2f}", flush=True)
        code = [str(suite.VENV / "bin" / "python"), "-c", MEASURE, str(ours), str(args.rounds)]
        subprocess.run(code, env=environment, cwd=ours, check=True)
        print(f"load {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
