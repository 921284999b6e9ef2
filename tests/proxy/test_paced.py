"""``pace="recorded"`` through the proxy: a recorded stream reaches a child process at its recorded offsets.

The proxy's decider runs in this process, so a virtual clock (``helpers.clock``) sees every wait it makes:
a paced replay (SSE or NDJSON) waits out the recorded gaps between the events, one that is not paced waits for none, and
neither measures the wall clock. Each wait of the decider is also held until the child has read every event
sent before it (the child notes each one in a file as it reads it): a relay that buffered the served stream
would hold them back, and the gate would stall. The stream server stays up and counts every request it gets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.clock import virtual_clock
from helpers.otlp_lines import last_json
from helpers.stream_server import EVENTS, LINES, stream_server

from otel_agent_replay import agent_run, load_tape, record, replay
from otel_agent_replay.cli import main

CHILD = """
import json, sys, urllib.request
events, last = 0, ""
with open(sys.argv[2], "a", encoding="utf-8") as marks, urllib.request.urlopen(sys.argv[1], timeout=60) as response:
    for line in response:
        if line.startswith((b"data: ", b"{")):  # an event's data (SSE), or a line of NDJSON
            events, last = events + 1, line.decode().removeprefix("data: ").strip()
            marks.write(f"{events}\\n")
            marks.flush()
print(json.dumps({"events": events, "last": last}), flush=True)
"""
GAP = 0.05
STALL = 60.0
"""Seconds a gated wait waits for the child before it gives up (only ever reached when the stream is held back)."""


@pytest.fixture
def child(tmp_path: Path) -> Path:
    path = tmp_path / "child.py"
    path.write_text(CHILD, encoding="utf-8")
    return path


@pytest.fixture
def proxied(mitmdump: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's environment as the proxy's children should start from: mitmdump found, no proxy of its own."""
    monkeypatch.setenv("AGENT_REPLAY_MITMDUMP", mitmdump)
    for name in [k for k in os.environ if k.endswith(("_PROXY", "_proxy"))]:
        monkeypatch.delenv(name)


def _decider(name: str) -> bool:
    """Whether a thread is one of the decider's request threads (``ThreadingHTTPServer``'s)."""
    return "process_request_thread" in name


def _read(marks: Path) -> int:
    """How many events the child has noted as read."""
    return len(marks.read_text(encoding="utf-8").split()) if marks.exists() else 0


@dataclass
class Waits:
    """Each wait asked of the virtual clock, with the name of the thread that asked; the gated waits that
    found the child still without an event sent before them."""

    asked: list[tuple[float, str]] = field(default_factory=list)
    stalled: list[int] = field(default_factory=list)

    def decider(self) -> list[float]:
        """What the decider's request threads waited, in seconds."""
        return [s for s, name in self.asked if _decider(name) and s > 0]


@contextmanager
def _clock(monkeypatch: pytest.MonkeyPatch, marks: Path) -> Iterator[Waits]:
    """A virtual clock for the block. A wait of the decider before its n-th event first waits (on a lock, not
    the clock) until the child has noted the n - 1 events before it."""
    waits = Waits()
    with virtual_clock(monkeypatch) as clock, monkeypatch.context() as patch:

        def noted(seconds: float) -> None:
            name = threading.current_thread().name
            waits.asked.append((seconds, name))
            if _decider(name) and seconds > 0:
                sent = len(waits.decider()) - 1
                pause = threading.Event()
                for _ in range(int(STALL / 0.01)):
                    if _read(marks) >= sent:
                        break
                    pause.wait(0.01)
                else:
                    waits.stalled.append(sent)
            clock.sleep(seconds)

        patch.setattr(time, "sleep", noted)
        yield waits


def _recorded_span(tape: Path, parts: int = len(EVENTS)) -> float:
    """Seconds from the stream's start to its last recorded event (what a paced replay waits in all)."""
    (step,) = load_tape(tape).runs[0].steps
    offsets = [float(e["offset"]) for e in step.result["events"]]
    assert len(offsets) == parts
    return offsets[-1]


def _run(child: Path, url: str, marks: Path) -> dict[str, Any]:
    # no timeout: Popen's timed wait polls with time.sleep, which the virtual clock would turn into a busy loop
    done = subprocess.run([sys.executable, str(child), url, str(marks)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("route", "parts"), [("events", len(EVENTS)), ("lines", len(LINES))], ids=["sse", "ndjson"])
def test_a_python_block_child_gets_a_recorded_stream_at_its_pace(
    route: str, parts: int, child: Path, proxied: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tape = tmp_path / "paced.jsonl"
    with stream_server() as server:
        url = f"{server.url}/{route}?gap={GAP}"
        with record(tape), agent_run("paced"):
            live = _run(child, url, tmp_path / "recorded.marks")
        assert live["events"] == parts and len(server.requests) == 1
        span = _recorded_span(tape, parts)
        assert span >= GAP * (parts - 1) * 0.9  # the server's gaps are on the tape

        marks = tmp_path / "plain.marks"
        with _clock(monkeypatch, marks) as plain, replay(tape) as session, agent_run("paced"):
            assert _run(child, url, marks) == live
        assert session.stats.hits == 1 and plain.decider() == []  # not paced: the whole answer at once

        marks = tmp_path / "paced.marks"
        with _clock(monkeypatch, marks) as paced, replay(tape, pace="recorded") as session, agent_run("paced"):
            assert _run(child, url, marks) == live
        assert session.stats.hits == 1
        assert paced.stalled == []  # each event had reached the child before the next was due
        waits = paced.decider()
        assert len(waits) == parts  # one wait before each event …
        assert sum(waits) == pytest.approx(span, abs=1e-6)  # … together the recorded stream's length
        assert len(server.requests) == 1  # still up, and nothing reached it


def test_replay_pace_recorded_on_the_command_line(
    cli: Any,
    proxy_env: dict[str, str],
    child: Path,
    proxied: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    tape = tmp_path / "command.jsonl"
    with stream_server() as server:
        url = f"{server.url}/events?gap={GAP}"
        command = [sys.executable, str(child), url, str(tmp_path / "recorded.marks")]
        recorded = cli("record", str(tape), "--", *command, env=proxy_env)
        assert recorded.returncode == 0, recorded.stderr
        live = last_json(recorded.stdout)
        span = _recorded_span(tape)
        for pace, marks in (("none", tmp_path / "plain.marks"), ("recorded", tmp_path / "paced.marks")):
            command[-1] = str(marks)
            capfd.readouterr()
            with _clock(monkeypatch, marks) as waits:  # the command's proxy decides in this process
                status = main(["replay", "--pace", pace, str(tape), "--", *command])
            said = capfd.readouterr()
            assert status == 0, said.err
            assert last_json(said.out) == live and _read(marks) == len(EVENTS)
            if pace == "none":
                assert waits.decider() == []  # the default: the whole answer at once
            else:
                assert waits.stalled == [] and len(waits.decider()) == len(EVENTS)
                assert sum(waits.decider()) == pytest.approx(span, abs=1e-6)
        assert len(server.requests) == 1  # still up, and nothing reached it
