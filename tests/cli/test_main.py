"""The otel-agent-replay command, called through main(argv) and once as the installed script."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.cli import main


@tool(side_effect="read_only")
def lookup(sku: str) -> dict[str, int]:
    return {"stock": 4}


@tool(side_effect="external")
def charge(amount: int) -> None:
    raise RuntimeError("card declined")


def _record(path: Path) -> str:
    with record(path), agent_run("shop", agent_version="2") as run:
        lookup("sku-1")
        with contextlib.suppress(RuntimeError):
            charge(12)
        run.set_output("partial")
    return run.run_id


def test_show_prints_each_run_as_a_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tape = tmp_path / "t.jsonl"
    run_id = _record(tape)
    assert main(["show", str(tape)]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id}" in out and "agent shop v2" in out and "2 steps" in out
    assert "1 lookup#1" in out and "read_only" in out and '{"sku":"sku-1"}' in out
    assert "2 charge#1" in out and "external" in out and "error" in out and "card declined" in out


def test_show_json_is_machine_readable(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    tape = tmp_path / "t.jsonl"
    run_id = _record(tape)
    assert main(["show", str(tape), "--json"]) == 0
    (run,) = orjson.loads(capsysbinary.readouterr().out)
    assert run["run_id"] == run_id and run["output"] == "partial"
    first, second = run["steps"]
    assert first["tool"] == "lookup" and first["args"] == {"sku": "sku-1"} and first["result"] == {"stock": 4}
    assert second["status"] == "error" and second["error"]["message"] == "card declined"
    assert second["side_effect"] == "external"


def test_errors_are_reported_with_exit_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"resourceSpans": []}\nnot json\n')
    assert main(["show", str(bad)]) == 2
    assert f"{bad}:2" in capsys.readouterr().err


def test_demo_records_the_four_step_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for step in ("fetch_document#1", "search_index#1", "summarise#1", "write_report#1"):
        assert step in out
    for shown in ("2. replay", "3. drift", "max_words: 120 → 80", "miss (strict)", "override", "live_tool_calls=0"):
        assert shown in out
    from otel_agent_replay import load_tape

    (run,) = load_tape(tmp_path / "tapes" / "demo.jsonl").runs
    assert [s.tool for s in run.steps] == ["fetch_document", "search_index", "summarise", "write_report"]
    assert [s.side_effect for s in run.steps] == ["read_only", "read_only", "read_only", "write"]
    assert run.steps[2].kind == "llm" and run.steps[2].input_tokens and run.steps[3].parent_step_id == "summarise#1"
    assert not (tmp_path / "report.md").exists()  # the last pass took the degraded branch
    # A second demo starts a fresh tape.
    assert main(["demo", "--out", str(tmp_path)]) == 0
    assert len(load_tape(tmp_path / "tapes" / "demo.jsonl").runs) == 1


def test_installed_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("otel-agent-replay")
    assert script.exists(), "install the package (pip install -e .) to get the console script"
    done = subprocess.run([str(script), "demo", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "write_report#1" in done.stdout
    shown = subprocess.run(
        [str(script), "show", str(tmp_path / "tapes" / "demo.jsonl"), "--json"], capture_output=True, timeout=120
    )
    assert shown.returncode == 0 and len(orjson.loads(shown.stdout)[0]["steps"]) == 4


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from otel_agent_replay import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"otel-agent-replay {__version__}"


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """``show --json | head``: the reader went away; no BrokenPipeError traceback, exit 141 (128 + SIGPIPE)."""
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("shop"):
        for n in range(200):
            lookup(f"sku-{n}")
    for extra in (["--json"], []):
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before the first byte, as after `head -n 1` is done
        try:
            done = subprocess.run(
                [sys.executable, "-m", "otel_agent_replay.cli", "show", str(tape), *extra],
                stdout=write_end,
                stderr=subprocess.PIPE,
                timeout=120,
            )
        finally:
            os.close(write_end)
        assert (done.returncode, done.stderr) == (141, b""), done.stderr.decode()


def test_the_demo_ends_with_commands_that_run_as_printed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "otel_agent_replay.cli", "demo", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()
    assert "otel_agent_replay/cli/_demo.py" in "\n".join(last[-4:])
    assert f"{tmp_path / 'out' / 'report.md'}" in "\n".join(last[-4:])
    command = last[-1].split("view the recording again with: ", 1)[1]
    shown = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "write_report#1" in shown.stdout


@tool(side_effect="read_only")
def search_orders(customer: str, turn: int) -> list[str]:
    return [f"order {turn} of {customer}: " + "a long line of order details " * 4]


def _react_tape(path: Path) -> Path:
    from otel_agent_replay import model_call

    @model_call(provider="openai", model="gpt-4o")
    def think(turn: int) -> dict[str, object]:
        return {"model": "gpt-4o-2024-08-06", "usage": {"input_tokens": 1000, "output_tokens": 500}}

    with record(path):
        with agent_run("react", run_id="react-run-1"):
            for turn in range(4):
                think(turn)
                search_orders("c-17", turn)
        with agent_run("other", run_id="other-run-2"):
            lookup("sku-9")
    return path


def test_show_draws_a_react_loop_flat_with_tokens_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tape = _react_tape(tmp_path / "react.jsonl")
    assert main(["show", str(tape), "--agent", "react"]) == 0
    lines = capsys.readouterr().out.splitlines()
    model_lines = [line for line in lines if " think#" in line]
    assert len(model_lines) == 4
    assert all(line.startswith(("├── ", "└── ")) for line in model_lines), model_lines  # depth 1, every turn
    tool_lines = [line for line in lines if " search_orders#" in line]
    assert all(line.startswith(("│   └── ", "    └── ")) for line in tool_lines), tool_lines  # depth 2: its turn
    assert "other-run-2" not in "\n".join(lines)  # --agent filters
    assert "1000 in / 500 out tokens  ~$0.0075" in model_lines[0]  # genai-prices: gpt-4o, $2.50 / $10 per Mtok
    assert "4000 in / 2000 out tokens  ~$0.0300 (estimated)" in lines[0]
    assert any("…" in line for line in lines)  # long results are shortened …
    assert main(["show", str(tape), "--run", "react", "--full"]) == 0
    full = capsys.readouterr().out
    assert "…" not in full and full.count("a long line of order details") == 16  # … but not with --full


def test_show_one_step_in_full_and_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tape = _react_tape(tmp_path / "react.jsonl")
    assert main(["show", str(tape), "--step", "search_orders#3"]) == 0
    out = capsys.readouterr().out
    assert "run react-run-1" in out and "parent think#3" in out and '"turn": 2' in out
    assert out.count("a long line of order details") == 4
    assert main(["show", str(tape), "--step", "nope#1"]) == 2
    assert "no step 'nope#1'" in capsys.readouterr().err
    assert main(["show", str(tape), "--run", "react-run-1", "--json"]) == 0
    (run,) = orjson.loads(capsys.readouterr().out)
    assert run["input_tokens"] == 4000 and run["cost_usd"] == pytest.approx(0.03)
    assert run["steps"][0]["cost_usd"] == pytest.approx(0.0075) and run["steps"][1]["cost_usd"] is None
