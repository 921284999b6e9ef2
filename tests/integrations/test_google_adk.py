"""google-adk, a whole agent framework, recorded and replayed: an ``LlmAgent`` with a plain function tool, run
by ``InMemoryRunner`` against the fake Gemini API (``tests/helpers/gemini_server.py``, the real wire format:
``generateContent`` with a ``functionCall`` answer, then text). google-adk pins google-genai and
OpenTelemetry below the project's pins, so the agent (``adk/agent.py``) runs in a venv of its own that
``scripts/dev.sh`` makes (``AGENT_REPLAY_ADK_PYTHON``), recording in one process and replaying in another.

ADK writes its own spans into the recording (scope ``gcp.vertex.agent``: ``invoke_workflow``,
``invoke_agent``, ``generate_content`` around each model request, ``execute_tool`` around the tool, with
the arguments only when GenAI content capture is on). The tape passes ``check``, shows one run and
replays with no warning and nothing unused, whether the agent runs in an ``agent_run`` or in the block's
own run, and with ADK's content capture off or on.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.gemini_server import fake_gemini
from helpers.rawtape import raw_spans

from otel_agent_replay import load_tape
from otel_agent_replay.cli import main

AGENT = Path(__file__).parent / "adk" / "agent.py"
KEY = "AIzaSyFakeKeyOfTheAdkTest0123456789abcd"  # the shape of a Gemini API key: never on the tape
ANSWER = 'Done: {"city": "Oslo", "forecast": "sunny"}'


def _agent(mode: str, tape: Path, url: str, wrap: str, content: str) -> dict[str, Any]:
    python = os.environ.get("AGENT_REPLAY_ADK_PYTHON")
    assert python, "run the tests through scripts/dev.sh test, which sets up the google-adk environment"
    env = {**os.environ, "GOOGLE_API_KEY": KEY, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": content}
    done = subprocess.run(
        [python, str(AGENT), mode, str(tape), url, wrap],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "could not put its capture point" not in done.stderr, done.stderr[-4000:]
    facts: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return facts


@pytest.mark.parametrize(
    ("wrap", "content"),
    [("run", ""), ("run", "SPAN_ONLY"), ("block", "")],
    ids=["agent_run", "agent_run, content captured", "the block's run"],
)
def test_a_google_adk_agent_records_checks_shows_and_replays_without_warnings(
    tape: Path, capsys: pytest.CaptureFixture[str], wrap: str, content: str
) -> None:
    with fake_gemini() as api:
        recorded = _agent("record", tape, api.url, wrap, content)
        assert len(api.requests) == 2  # the functionCall turn, then the answer
        replayed = _agent("replay", tape, api.url, wrap, content)
        assert len(api.requests) == 2  # the replay sent nothing
    assert recorded["texts"] == replayed["texts"] == [ANSWER]
    assert recorded["warnings"] == [] and replayed["warnings"] == []
    assert replayed["calls"] == ["Oslo"]  # a plain function tool: the framework runs it again, offline
    stats = replayed["stats"]
    assert (stats["tape_hits"], stats["tape_misses"], stats["unused_entries"]) == (2, 0, 0)

    raw = tape.read_bytes()
    assert KEY.encode() not in raw
    adk = {s.name: s for s in raw_spans(tape) if s.span.get("parentSpanId") and "agent_replay.run_id" not in s.attrs}
    if wrap == "run":  # the framework's spans ran inside the recorded run: the tape has them
        assert {"invoke_agent forecaster", "generate_content gemini-test", "execute_tool get_weather"} <= set(adk)
        assert ("gen_ai.tool.call.arguments" in adk["execute_tool get_weather"].attrs) is bool(content)
    else:  # the block's own run begins at its first step, below the framework's spans: they are not its
        assert adk == {}

    (run,) = load_tape(tape).runs
    models = [s.step_id for s in run.steps if s.kind == "llm"]
    assert models == ["gemini.generate_content#1", "gemini.generate_content#2"]
    # With its arguments, ADK's tool span is a step of the run (a double could replay it); never unused.
    assert [s.step_id for s in run.steps if s.kind != "llm"] == (["get_weather#1"] if content else [])

    capsys.readouterr()
    assert main(["check", str(tape)]) == 0, capsys.readouterr()
    assert main(["show", str(tape)]) == 0
    out, err = capsys.readouterr()
    assert [line.split("  ")[0] for line in out.splitlines() if line.startswith("run ")] == [f"run {run.run_id}"]
    assert "warning:" not in out + err and "Warning" not in err  # neither show's line nor a Python warning

    # The run's last step removed: check finds it by the run span's step count.
    last = max((s for s in run.steps if s.kind == "llm"), key=lambda s: s.seq)  # ours: ADK's tool span is no count
    cut = tape.with_name("cut.jsonl")
    cut.write_bytes(b"".join(line for line in raw.splitlines(keepends=True) if last.span_id.encode() not in line))
    assert main(["check", str(cut)]) == 1
    assert f"run {run.run_id} ended with {last.seq} step(s)" in capsys.readouterr().out
