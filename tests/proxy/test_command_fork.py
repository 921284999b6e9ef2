"""``fork TAPE --at STEP --result JSON -- CMD``: a tape a command recorded (``record TAPE -- CMD``) forked like
any other. The command (Python's urllib, through the real mitmproxy) asks a REST API on 127.0.0.1 for items,
then asks again for the first item's name: edited at the first answer, its second request leaves the
recording and goes live (``--then live``), onto the fork tape; with ``--then raise`` nothing goes live."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers.otlp_lines import last_json
from helpers.rest_server import rest_api

from otel_agent_replay import load_tape
from otel_agent_replay.core import attributes as A

Cli = Callable[..., Any]

CHILD = """
import json, sys, urllib.request
base = sys.argv[1]
with urllib.request.urlopen(base + "/items?room=study", timeout=60) as response:
    name = json.load(response)["items"][0]["name"]
with urllib.request.urlopen(base + "/items?for=" + name, timeout=60) as response:
    again = json.load(response)["query"]
print(json.dumps({"first": name, "again": again}), flush=True)
"""
SOFA = {"items": [{"id": "i-9", "name": "sofa"}], "query": {"room": "study"}}


def _said(stdout: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """What the command printed (its one line, if it got that far) and the indented JSON ``fork --json`` printed
    after it."""
    cut = 0 if stdout.startswith("{\n") else stdout.index("\n{\n") + 1
    line = stdout[:cut].strip()
    return (json.loads(line) if line else None), json.loads(stdout[cut:])


def test_a_command_tape_forks_at_an_edited_answer_and_goes_live_after_it(
    cli: Cli, proxy_env: dict[str, str], tmp_path: Path
) -> None:
    tape, fork = tmp_path / "items.jsonl", tmp_path / "items.fork.jsonl"
    child = tmp_path / "items.py"
    child.write_text(CHILD, encoding="utf-8")
    with rest_api() as api:
        command = ["--", sys.executable, str(child), api.url]
        recorded = cli("record", str(tape), "--agent", "shopper", *command, env=proxy_env)
        assert recorded.returncode == 0, recorded.stderr
        assert last_json(recorded.stdout) == {"first": "lamp", "again": {"for": "lamp"}}
        (run,) = load_tape(tape).runs
        first = run.steps[0].step_id
        assert [s.tool for s in run.steps] == [f"GET {api.authority}/items"] * 2 and len(api.requests) == 2

        edited = ["--at", first, "--result", json.dumps(SOFA)]
        sealed = cli(
            "fork",
            str(tape),
            *edited,
            "--then",
            "raise",
            "-o",
            str(tmp_path / "sealed.jsonl"),
            "--json",
            *command,
            env=proxy_env,
        )
        assert sealed.returncode == 1, sealed.stderr  # the second request left the recording: refused
        assert _said(sealed.stdout)[1]["error"].startswith(("TapeMiss", "TapeDrift"))
        assert len(api.requests) == 2  # nothing went live

        forked = cli("fork", str(tape), *edited, "-o", str(fork), "--json", *command, env=proxy_env)
        assert forked.returncode == 0, forked.stderr
        printed, said = _said(forked.stdout)
        assert printed == {"first": "sofa", "again": {"for": "sofa"}}  # the command saw the edited answer
        assert said["forked"] and said["exit_status"] == 0 and said["fork"]["step_id"] == run.steps[1].step_id
        assert len(api.requests) == 3 and api.requests[-1][1] == "/items?for=sofa"  # only the new request live

    (again,) = load_tape(fork).runs  # the fork tape: the command's run, read like any other
    assert again.agent_name == "shopper"
    assert [s.tool for s in again.steps] == [f"GET {api.authority}/items"] * 2
    assert again.steps[0].result["body"] == SOFA and again.steps[1].result["body"]["query"] == {"for": "sofa"}
    assert all(A.PROCESS_COMMAND in s.attributes for s in again.steps)  # each step names the process that sent it
    shown = cli("show", str(fork), env=proxy_env)
    assert shown.returncode == 0, shown.stderr
    assert f"fork of {tape}, run {run.run_id}, at step {first}, edit {first} = " in shown.stdout  # its lineage
    assert f"; diverged at {run.steps[1].step_id}" in shown.stdout  # where the command then left the recording


def test_fork_needs_an_agent_or_a_command_not_both(cli: Cli, proxy_env: dict[str, str], tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    tape.write_text("", encoding="utf-8")
    neither = cli("fork", str(tape), "--at", "x#1", "--result", "1", env=proxy_env)
    assert neither.returncode == 2 and "--agent MODULE:FUNCTION" in neither.stderr
    assert "record TAPE -- CMD" in neither.stderr
    both = cli("fork", str(tape), "--agent", "m:f", "--", "true", env=proxy_env)
    assert both.returncode == 2 and "not both" in both.stderr


ORDER_CHILD = """
import json, sys, urllib.request
base = sys.argv[1]
with urllib.request.urlopen(base + "/items?room=study", timeout=60) as response:
    name = json.load(response)["items"][0]["name"]
order = urllib.request.Request(base + "/orders", data=json.dumps({"item": name}).encode(), method="POST")
order.add_header("content-type", "application/json")
with urllib.request.urlopen(order, timeout=60) as response:
    print(json.dumps(json.load(response)), flush=True)
"""


def test_a_refused_write_in_a_command_fork_hints_a_fork_command_that_runs_as_printed(
    cli: Cli, proxy_env: dict[str, str], tmp_path: Path
) -> None:
    tape, fork = tmp_path / "orders.jsonl", tmp_path / "orders.fork.jsonl"
    child = tmp_path / "orders.py"
    child.write_text(ORDER_CHILD, encoding="utf-8")
    with rest_api() as api:
        recorded = cli("record", str(tape), "--", sys.executable, str(child), api.url, env=proxy_env)
        assert recorded.returncode == 0, recorded.stderr
        assert last_json(recorded.stdout) == {"id": "o-77", "item": "lamp"}
        (run,) = load_tape(tape).runs
        argv = ["fork", str(tape), "--at", run.steps[0].step_id, "--result", json.dumps(SOFA), "-o", str(fork)]
        refused = cli(*argv, "--", sys.executable, str(child), api.url, env=proxy_env)
        assert refused.returncode == 1, refused.stderr
        assert "SideEffectRefused" in refused.stderr and len(api.requests) == 2  # the sofa order never went out
        said = refused.stderr.split("To get its recorded result without running it: ", 1)[1]
        hint = shlex.split(said.split(" (or, for every such tool", 1)[0])
        assert hint[:2] == ["otel-agent-replay", "fork"]
        assert hint[hint.index("--") :] == ["--", sys.executable, str(child), api.url]  # the command last
        assert f"POST {api.authority}/orders" in hint

        again = cli(*hint[1:], env=proxy_env)  # as printed (the same command, run as a module here)
        assert again.returncode == 0, again.stderr
        printed, _, summary = again.stdout.partition("\n")
        assert json.loads(printed) == {"id": "o-77", "item": "lamp"}  # the recorded answer, stubbed
        assert "(the command exited 0)" in summary and str(fork) in summary
        assert len(api.requests) == 2  # nothing reached the server
