"""The shared-client replay suite against its floor: what any run of the project pays, what each library adds,
where a test's CPU goes (per phase, garbage collection), and the instructions of N tests (issue 34, scope 3 and 6).

Run it after ``bash bench/suite/setup.sh`` (once)::

    .venv/bin/python bench/suite_floor.py                      # 50 and 500 tests, 5 rounds
    .venv/bin/python bench/suite_floor.py --rounds 3 --tests 200
    .venv/bin/python bench/suite_floor.py --callgrind 10,30    # also instructions of 10 and 30 tests
    .venv/bin/python bench/suite_floor.py --no-install         # measure what the suite venv holds

It makes the three projects of ``bench_suite.py --shared-client`` (the agent's ``OpenAI`` client built once,
at import): ours (``agent_tape``, ``@tool``), pytest-recording's (``@pytest.mark.vcr``), and the **floor**:
the same agent and tests with neither library, its client on an ``httpx2.MockTransport`` that answers each
request with what the fake provider answered when the tapes were recorded (``chat_completion`` of
``tests/helpers/model_server.py``, computed in the handler: a few µs). The floor is what every replay suite
of this project pays whatever records it: pytest, the openai SDK and httpx imported, the tests collected, the
SDK's request building and response parsing, pytest's reports and its collections at the end. Each
process's CPU (user + system, ``wait4``) is measured in rounds, the three interleaved, and the arithmetic
printed: each library's own share (its run less the floor's, paired per round), and what ``ours ≤ 0.8 ×
pytest-recording`` leaves ours at each size.

Then one more run of each with a phase plugin (``-p suite_phases``, a file this script writes): per test
the CPU of pytest's setup, call and teardown (median over tests 2…N), the first test's, the CPU before the
first test and after the last, and the time spent in garbage collection (``gc.callbacks``) with the
number of collections and the objects tracked at the end. ``--callgrind A,B`` counts the instructions of a
pytest run of A and of B tests of each project under callgrind (load-independent) and prints the
instructions per extra test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_suite as suite
from callgrindlib import _COLLECTED, VALGRIND

REPO = Path(__file__).resolve().parent.parent

FLOOR_CLIENT = """
import httpx2
from model_server import chat_completion


def _answer(request):
    return httpx2.Response(200, json=chat_completion(json.loads(request.content)))


CLIENT = openai.OpenAI(
    base_url=os.environ["BENCH_OPENAI_URL"],
    api_key="bench-key",
    max_retries=0,
    http_client=httpx2.Client(transport=httpx2.MockTransport(_answer)),
)

"""
FLOOR_TEST = """
def test_q{n}():
    assert "shipped" in run_agent("Where is order {n}?")
"""

PHASES = '''
"""Per-phase CPU of each test, and garbage collection, written as JSON at the end (suite_floor.py)."""
import gc
import json
import os
import time

import pytest

_clock = time.process_time
_found = {"setup": [], "call": [], "teardown": [], "gc_s": 0.0, "collections": 0, "first_test_at": None}
_gc_started = [0.0]


def _gc(phase, info):
    if phase == "start":
        _gc_started[0] = _clock()
    else:
        _found["gc_s"] += _clock() - _gc_started[0]
        _found["collections"] += 1


gc.callbacks.append(_gc)


def _timed(name):
    def hook(*args, **kwargs):
        if _found["first_test_at"] is None:
            _found["first_test_at"] = _clock()
        start = _clock()
        result = yield
        _found[name].append(_clock() - start)
        return result

    return pytest.hookimpl(wrapper=True)(hook)


pytest_runtest_setup = _timed("setup")
pytest_runtest_call = _timed("call")
pytest_runtest_teardown = _timed("teardown")


def pytest_unconfigure(config):
    _found["last_test_done_at"] = _clock()
    _found["tracked_at_end"] = len(gc.get_objects())
    with open(os.environ["SUITE_PHASES_OUT"], "w") as out:
        json.dump(_found, out)
'''

DISABLE = {
    "ours": ("-p", "no:recording"),
    "vcr": ("-p", "no:otel_agent_replay"),
    "floor": ("-p", "no:recording", "-p", "no:otel_agent_replay"),
}


def make_floor(root: Path, tests: int) -> Path:
    """The floor project: the shared-client agent on a mock transport, the same tests, no library."""
    project = root / "floor"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    shutil.copy(REPO / "tests" / "helpers" / "model_server.py", project / "model_server.py")
    agent = suite.AGENT.format(import_tool="", decorator="", client_at_import=FLOOR_CLIENT, client="CLIENT")
    (project / "agent.py").write_text(textwrap.dedent(agent))
    for module in range(tests // suite.PER_MODULE):
        numbers = range(module * suite.PER_MODULE, (module + 1) * suite.PER_MODULE)
        text = "from agent import run_agent\n" + "".join(FLOOR_TEST.format(n=n) for n in numbers)
        (project / "tests" / f"test_m{module:03d}.py").write_text(text)
    return project


def projects(work: Path, tests: int) -> tuple[dict[str, Path], str]:
    """The three projects, the tapes and cassettes recorded; the provider's URL the recordings hold."""
    made = {kind: suite.make_suite(work, kind, tests, shared_client=True) for kind in ("ours", "vcr")}
    made["floor"] = make_floor(work, tests)
    with suite.fake_provider() as provider:
        url = provider.openai_url
        print(f"recording {tests} tapes and {tests} cassettes …", file=sys.stderr, flush=True)
        suite.check(
            suite.pytest_cmd(*DISABLE["ours"], "--agent-record-mode=once"),
            made["ours"],
            suite.env(url),
            f"{tests} passed",
        )
        suite.check(
            suite.pytest_cmd(*DISABLE["vcr"], "--record-mode=once"), made["vcr"], suite.env(url), f"{tests} passed"
        )
    for kind, project in made.items():  # replayed (the floor: answered by its transport), the provider stopped
        suite.check(suite.pytest_cmd(*DISABLE[kind]), project, suite.env(url), f"{tests} passed")
    return made, url


def first(n: int) -> list[str]:
    return [f"tests/test_m{m:03d}.py" for m in range(n // suite.PER_MODULE)]


def timed_rounds(made: dict[str, Path], url: str, tests: int, reps: int) -> dict[str, Any]:
    cases = {}
    for size in (50, tests):
        for kind, project in made.items():
            chosen = first(size) if size != tests else []
            cases[f"{kind}_{size}"] = (suite.pytest_cmd(*DISABLE[kind], *chosen), project, suite.env(url))
    print(f"{len(cases)} runs a round, {reps} rounds …", file=sys.stderr, flush=True)
    found = suite.rounds(cases, reps)
    for size in (50, tests):
        for kind in ("ours", "vcr"):
            found[f"{kind}_over_floor_{size}"] = suite.paired(found, f"{kind}_{size}", f"floor_{size}")
        found[f"paired_{size}"] = suite.paired(found, f"ours_{size}", f"vcr_{size}")
        # what 0.8x leaves ours above the floor, round by round: 0.8 * theirs - floor
        room = [
            0.8 * v - f
            for v, f in zip(found[f"vcr_{size}"]["cpu_samples"], found[f"floor_{size}"]["cpu_samples"], strict=True)
        ]
        found[f"room_{size}_ms"] = {
            "median": statistics.median(room) * 1e3,
            "range": [min(room) * 1e3, max(room) * 1e3],
        }
    return found


def phases(made: dict[str, Path], url: str, tests: int, plugin_dir: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for kind, project in made.items():
        out = plugin_dir / f"{kind}.json"
        environment = {**suite.env(url), "PYTHONPATH": str(plugin_dir), "SUITE_PHASES_OUT": str(out)}
        suite.check(suite.pytest_cmd(*DISABLE[kind], "-p", "suite_phases"), project, environment, f"{tests} passed")
        raw = json.loads(out.read_text())
        found[kind] = {
            **{f"{p}_ms": statistics.median(raw[p][1:]) * 1e3 for p in ("setup", "call", "teardown")},
            "first_test_ms": (raw["setup"][0] + raw["call"][0] + raw["teardown"][0]) * 1e3,
            "before_first_test_s": raw["first_test_at"],
            "tests_s": raw["last_test_done_at"] - raw["first_test_at"],
            "gc_s": raw["gc_s"],
            "collections": raw["collections"],
            "tracked_at_end": raw["tracked_at_end"],
        }
    return found


def callgrind(made: dict[str, Path], url: str, sizes: tuple[int, int]) -> dict[str, Any]:
    """Instructions of a pytest run of each size of each project (every thread); per extra test."""
    found: dict[str, Any] = {}
    for kind, project in made.items():
        for size in sizes:
            cmd = [*VALGRIND, *suite.pytest_cmd(*DISABLE[kind], *first(size))]
            proc = subprocess.run(cmd, cwd=project, env=suite.env(url), capture_output=True, check=False)
            count = _COLLECTED.search(proc.stderr)
            if proc.returncode != 0 or count is None:
                raise SystemExit(
                    f"{kind} {size}: callgrind run failed:\n{proc.stderr.decode(errors='replace')[-2000:]}"
                )
            found[f"{kind}_{size}"] = int(count.group(1))
            print(
                f"  callgrind {kind} {size} tests: {found[f'{kind}_{size}'] / 1e6:,.1f} M", file=sys.stderr, flush=True
            )
        found[f"{kind}_per_test"] = (found[f"{kind}_{sizes[1]}"] - found[f"{kind}_{sizes[0]}"]) / (sizes[1] - sizes[0])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout to install (default: this one)")
    parser.add_argument("--no-install", action="store_true", help="measure what the suite venv holds")
    parser.add_argument("--callgrind", help="two suite sizes, e.g. 10,30: their instructions under callgrind")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.tests <= 50 or args.tests % suite.PER_MODULE:
        parser.error(f"--tests: more than 50, a multiple of {suite.PER_MODULE} (the small suite is the first 50)")
    if args.callgrind and any(int(n) < suite.PER_MODULE for n in args.callgrind.split(",")):
        parser.error(f"--callgrind: two sizes of at least {suite.PER_MODULE} tests, e.g. 10,30")
    if not (suite.VENV / ".installed").exists():
        print(f"no suite venv at {suite.VENV}: run bash bench/suite/setup.sh first", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="suite-floor-"))
    report: dict[str, Any] = {"load_at_start": os.getloadavg()[0]}
    try:
        report["wheels"] = "as installed" if args.no_install else suite.install(args.source.resolve(), work)
        made, url = projects(work, args.tests)
        report["rounds"] = timed_rounds(made, url, args.tests, args.rounds)
        plugin_dir = work / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "suite_phases.py").write_text(PHASES)
        report["phases"] = phases(made, url, args.tests, plugin_dir)
        if args.callgrind:
            low, high = (int(n) for n in args.callgrind.split(","))
            report["callgrind"] = callgrind(made, url, (low, high))
        report["load_at_end"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    summary(report, args.tests)
    return 0


def summary(report: dict[str, Any], tests: int) -> None:
    found = report["rounds"]
    print(f"load {report['load_at_start']:.2f} → {report['load_at_end']:.2f}; {report['wheels']}")
    for size in (50, tests):
        cpu = {kind: found[f"{kind}_{size}"]["cpu_s"] for kind in ("floor", "vcr", "ours")}
        pair, room = found[f"paired_{size}"], found[f"room_{size}_ms"]
        print(
            f"{size} tests, CPU s (median of rounds): floor {cpu['floor']:.2f}, pytest-recording {cpu['vcr']:.2f}, "
            f"ours {cpu['ours']:.2f}; ours / pytest-recording {pair['ratio']:.2f}x "
            f"[{pair['ratio_range'][0]:.2f}–{pair['ratio_range'][1]:.2f}]"
        )
        for kind, name in (("vcr", "pytest-recording"), ("ours", "ours")):
            over = found[f"{kind}_over_floor_{size}"]
            low, high = over["diff_range_ms"]
            print(f"  {name} over the floor: {over['diff_ms']:+.0f} ms [{low:+.0f} … {high:+.0f}] (paired)")
        low, high = room["range"]
        print(
            f"  0.8x pytest-recording less the floor (what ours may add at most): {room['median']:+.0f} ms "
            f"[{low:+.0f} … {high:+.0f}], {room['median'] / size:+.2f} ms a test"
        )
    print("one run each with the phase plugin (CPU; per test: median over tests 2…N):")
    for kind, row in report["phases"].items():
        print(
            f"  {kind:5s} setup {row['setup_ms']:.2f} call {row['call_ms']:.2f} teardown {row['teardown_ms']:.2f} ms; "
            f"first test {row['first_test_ms']:.0f} ms; before it {row['before_first_test_s']:.2f} s; "
            f"the tests {row['tests_s']:.2f} s; GC {row['gc_s']:.3f} s in {row['collections']} collections, "
            f"{row['tracked_at_end']:,} objects tracked at the end"
        )
    if "callgrind" in report:
        counts = report["callgrind"]
        print(
            "instructions (callgrind), per extra test: "
            + ", ".join(f"{kind} {counts[f'{kind}_per_test'] / 1e6:.2f} M" for kind in ("floor", "vcr", "ours"))
        )
        print(
            "  whole runs: "
            + ", ".join(f"{k} {v / 1e6:,.1f} M" for k, v in counts.items() if not k.endswith("per_test"))
        )


if __name__ == "__main__":
    raise SystemExit(main())
