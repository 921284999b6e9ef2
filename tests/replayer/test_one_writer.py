"""One tape, one writer: processes that record or append to one tape at once, as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

from otel_agent_replay import agent_run, load_tape, record, tool

WRITERS = Path(__file__).resolve().parent.parent / "helpers" / "tape_writers.py"


def _start(*args: str, stderr: Path | None = None) -> subprocess.Popen[str]:
    err = stderr.open("w", encoding="utf-8") if stderr is not None else None
    try:
        return subprocess.Popen(
            [sys.executable, str(WRITERS), *args], stdout=subprocess.PIPE, stderr=err or subprocess.PIPE, text=True
        )
    finally:
        if err is not None:
            err.close()


def _finish(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert isinstance(result, dict)
    return result


def _wait_for(what: str, ready: object) -> None:
    """Wait (bounded) until ``ready()`` is true: a synchronisation point between processes, not a timing."""
    deadline = time.monotonic() + 120
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} (120 s)")
        time.sleep(0.02)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def test_a_second_once_waits_for_the_first_and_replays_what_it_recorded(tmp_path: Path) -> None:
    tape, markers, gate = tmp_path / "t.jsonl", tmp_path / "markers", tmp_path / "gate"
    first = _start("once", str(tape), str(markers), str(gate))
    _wait_for("the first process to be inside its recording", lambda: len(_lines(markers)) == 1)
    second_err = tmp_path / "second.err"
    second = _start("once", str(tape), str(markers), str(gate), stderr=second_err)
    _wait_for(
        "the second process to say it waits",
        lambda: f"is being written by pid {first.pid}" in second_err.read_text(encoding="utf-8"),
    )
    gate.touch()
    one, two = _finish(first), _finish(second)
    assert one == {"recorded": True, "out": ["A", "B"]}
    assert two == {"recorded": False, "out": ["A", "B"]}
    assert _lines(markers) == [str(first.pid)] * 2  # only the recording process ran the tools
    warned = second_err.read_text(encoding="utf-8")
    assert warned.count("TapeWarning") == 1 and "replay (mode='once') waits for it" in warned
    (run,) = load_tape(tape).runs
    assert [s.tool for s in run.steps] == ["lookup", "lookup"]
    assert not (tmp_path / "t.jsonl.lock").exists()
    # Afterwards the tape replays strictly, in either process's place.
    for _ in range(2):
        assert _finish(_start("strict", str(tape), str(markers))) == {"recorded": False, "out": ["A", "B"]}
    assert _lines(markers) == [str(first.pid)] * 2


def test_two_onces_started_together_record_once(tmp_path: Path) -> None:
    for round_ in range(2):
        tape, markers = tmp_path / f"t{round_}.jsonl", tmp_path / f"m{round_}"
        procs = [_start("once", str(tape), str(markers), "") for _ in range(2)]
        results = [_finish(p) for p in procs]
        assert sorted(r["recorded"] for r in results) == [False, True]  # type: ignore[type-var]
        recorder = next(p for p, r in zip(procs, results, strict=True) if r["recorded"])
        assert _lines(markers) == [str(recorder.pid)] * 2
        assert len(load_tape(tape).runs) == 1
        assert _finish(_start("strict", str(tape), str(markers)))["out"] == ["A", "B"]


def test_appends_from_processes_at_once_come_out_one_after_the_other(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"

    @tool(side_effect="read_only")
    def lookup(q: str) -> str:
        return q.upper()

    with record(tape), agent_run("agent", input="q"):
        lookup("a")
    writers, each = 3, 6
    procs = [_start("append", str(tape), f"w{n}", str(each)) for n in range(writers)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    raw = tape.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines()
    assert len(lines) == 2 + writers * each  # the run span, the recorded step, one line per append
    assert all(isinstance(orjson.loads(line), dict) for line in lines)  # every line whole
    (run,) = load_tape(tape).runs
    assert [s.seq for s in run.steps] == list(range(1, 2 + writers * each))
    probes = [s.tool for s in run.steps[1:]]
    assert sorted(probes) == sorted(f"probe_w{n}_{i}" for n in range(writers) for i in range(each))
    for n in range(writers):  # each writer's appends in its own order
        mine = [p for p in probes if p.startswith(f"probe_w{n}_")]
        assert mine == [f"probe_w{n}_{i}" for i in range(each)]
    assert not tape.with_name("t.jsonl.lock").exists()
    assert os.listdir(tmp_path) == ["t.jsonl"]
