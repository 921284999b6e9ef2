"""Python processes started from a ``record()``/``replay()`` block join it: their decorated tools are steps
of the run that started them, recorded on the parent's tape, answered from it and refused like the parent's."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import subprocess
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers.joined_tools import outside, process_main, worker
from helpers.model_server import fake_provider
from helpers.passfds_curl import post_by_spawnv_passfds
from helpers.pinged import ping, ping_tape
from helpers.rest_server import rest_api

from otel_agent_replay import agent_run, load_tape, open_store, record, replay
from otel_agent_replay.core import SideEffectRefused
from otel_agent_replay.core import attributes as A


def _children(folder: Path, out: Path, method: str) -> list[dict[str, Any]]:
    """A multiprocessing worker, then a process pool's, both started from here."""
    context = multiprocessing.get_context(method)
    child = context.Process(target=process_main, args=(str(folder), "spawned", str(out / "spawned.json")))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        pooled = pool.submit(worker, str(folder), "pooled").result(120)
    return [json.loads((out / "spawned.json").read_text(encoding="utf-8")), pooled]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_multiprocessing_workers_join_the_block(tmp_path: Path, method: str) -> None:
    tape = tmp_path / "joined.jsonl"
    markers = tmp_path / "markers"
    markers.mkdir()
    with record(tape), agent_run("parent"):
        live = _children(markers, tmp_path, method)
    assert [r["write"] for r in live] == ["written", "written"]
    assert sorted(p.name for p in markers.iterdir()) == ["pooled", "spawned"]  # recorded for real
    for marker in markers.iterdir():
        marker.unlink()

    (run,) = load_tape(tape).runs  # the children's steps are the parent's run's, in the order they ran
    assert run.agent_name == "parent"
    assert [(s.tool, s.seq) for s in run.steps] == [
        ("lookup", 1),
        ("write_marker", 2),
        ("lookup", 3),
        ("write_marker", 4),
    ]
    assert [s.result for s in run.steps if s.tool == "lookup"] == [r["lookup"] for r in live]
    pids = {int(s.attributes[A.PROCESS_PID]) for s in run.steps}
    assert pids == {r["pid"] for r in live} and os.getpid() not in pids
    with open_store(tmp_path / "evidence.db") as store:  # the store reads the tape like any other
        ingested = store.ingest(tape)
    assert (ingested.sessions, ingested.tool_calls, ingested.warnings) == (1, 4, ())

    with pytest.raises(SideEffectRefused), replay(tape) as session, agent_run("parent"):  # strict: the writes refused
        refused = _children(markers, tmp_path, method)
    assert [r["lookup"] for r in refused] == [r["lookup"] for r in live]  # from the tape: the same nonces
    assert [r["write"] for r in refused] == ["SideEffectRefused", "SideEffectRefused"]
    assert list(markers.iterdir()) == []
    assert session.stats.refused_side_effects == 2 and session.stats.hits == 2

    with replay(tape, stub=["write_marker"]) as session, agent_run("parent"):  # the child follows the parent's stubs
        stubbed = _children(markers, tmp_path, method)
    assert [r["lookup"] for r in stubbed] == [r["lookup"] for r in live]
    assert [r["write"] for r in stubbed] == ["written", "written"]  # the recorded answer
    assert list(markers.iterdir()) == []
    assert session.stats.stubbed_side_effects == 2 and session.stats["unused_entries"] == 0


def test_a_fork_server_started_in_a_block_serves_later_workers_outside_it(tmp_path: Path) -> None:
    """multiprocessing's fork server lives as long as this process: started by a block's forkserver child, it
    must carry none of the block (its proxy, its ticket, its startup folder) into the workers of later pools."""
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]  # so this block starts it
    markers = tmp_path / "markers"
    markers.mkdir()
    with record(tmp_path / "block.jsonl"), agent_run("parent"):
        live = _children(markers, tmp_path, "forkserver")
    assert [r["write"] for r in live] == ["written", "written"]
    with rest_api() as api, ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        seen = pool.submit(outside, api.url).result(120)
        assert seen == {"set": [], "joined": False, "status": 200}
        assert len(api.requests) == 1  # the live server reached, no proxy between


_BLOCK_VARIABLES = {b"AGENT_REPLAY_JOIN", b"HTTP_PROXY", b"HTTPS_PROXY", b"http_proxy", b"https_proxy", b"ALL_PROXY"}


def _block_variables(pid: int) -> list[bytes]:
    """What process ``pid`` holds of a block's: its proxy variables and ticket, the startup folder."""
    environ = dict(e.partition(b"=")[::2] for e in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if e)
    found = sorted(_BLOCK_VARIABLES & environ.keys())
    return found + [p for p in environ.get(b"PYTHONPATH", b"").split(os.pathsep.encode()) if b"agent-replay-join" in p]


def test_multiprocessings_own_servers_first_needed_in_a_replay_are_not_its_children(tmp_path: Path) -> None:
    """A lock's resource tracker and a fork server started outside any ``start()`` (the lock made, the server
    asked for, in the block): started outside the block, as they outlive it, and not counted."""
    multiprocessing.resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]  # so the block starts them
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]
    tape = ping_tape(tmp_path / "ping.jsonl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replay(tape, allow_hosts=[]) as session, agent_run("a"):
            ping()
            lock = multiprocessing.get_context("spawn").Lock()  # its semaphore registered: the tracker starts
            multiprocessing.forkserver.ensure_running()
    tracker = multiprocessing.resource_tracker._resource_tracker._pid  # type: ignore[attr-defined]
    server = multiprocessing.forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    assert isinstance(tracker, int) and isinstance(server, int)
    assert _block_variables(tracker) == [] and _block_variables(server) == []
    assert session.stats.child_processes == 0
    assert not [w for w in caught if "child_processes" in str(w.message)]
    del lock


# --- a subprocess's HTTP through the block's proxy ---------------------------------------------------

OPENAI_CHILD = """
import json, os, openai
print("pid", os.getpid(), flush=True)
client = openai.OpenAI(max_retries=0)
messages = [{"role": "user", "content": "hello from a child"}]
answer = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
print(json.dumps({"answer": answer.choices[0].message.content, "tokens": answer.usage.total_tokens}), flush=True)
"""


def _agent(child: Path, model_url: str, api_url: str) -> dict[str, Any]:
    """The agent's tool: a Python child process that calls the model with the openai SDK, then curl POSTs."""
    env = {**os.environ, "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "sk-child-key-" + os.urandom(8).hex()}
    said = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=120)
    assert said.returncode == 0, said.stderr[-3000:]
    command = ["curl", "-sS", "-X", "POST", "-H", "content-type: application/json", "-d", '{"sku": "a-1"}']
    posted = subprocess.run([*command, "-w", " %{http_code}", f"{api_url}/orders"], capture_output=True, text=True)
    lines = said.stdout.strip().splitlines()
    return {"child": json.loads(lines[-1]), "pid": int(lines[0].split()[1]), "curl": posted.stdout}


def test_a_subprocess_model_call_and_a_curl_post_are_steps_of_the_run(
    tmp_path: Path, mitmdump: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_REPLAY_MITMDUMP", mitmdump)
    for name in [k for k in os.environ if k.endswith(("_PROXY", "_proxy"))]:
        monkeypatch.delenv(name)
    tape = tmp_path / "subprocess.jsonl"
    child = tmp_path / "child.py"
    child.write_text(OPENAI_CHILD, encoding="utf-8")
    with fake_provider() as fake, rest_api() as api:
        with record(tape), agent_run("parent"):
            live = _agent(child, fake.openai_url, api.url)
        assert "hello from a child" in live["child"]["answer"] and live["child"]["tokens"] > 0
        assert live["curl"].endswith(" 200") or live["curl"].endswith(" 201")
        assert len(fake.requests) == 1 and len(api.requests) == 1
        (run,) = load_tape(tape).runs
        assert run.agent_name == "parent"
        assert [s.tool for s in run.steps] == ["openai.chat.completions", f"POST {api.authority}/orders"]
        chat, post = (s.attributes for s in run.steps)  # each step names the process that sent it
        assert int(chat[A.PROCESS_PID]) == live["pid"] and str(child) in chat[A.PROCESS_COMMAND]
        assert post[A.PROCESS_COMMAND].startswith("curl -sS -X POST") and int(post[A.PROCESS_PID]) > 0
        text = tape.read_text(encoding="utf-8").lower()
        assert "sk-child-key" not in text and "proxy-authorization" not in text  # the proxy's credentials neither

        with pytest.raises(SideEffectRefused), replay(tape) as session, agent_run("parent"):
            replayed = _agent(child, fake.openai_url, api.url)
        assert replayed["child"] == live["child"]  # the child's model call answered from the tape
        assert replayed["curl"].endswith(" 403") and "SideEffectRefused" in replayed["curl"]  # curl saw an HTTP error
        assert session.stats.child_processes == 2  # still counted
        assert len(fake.requests) == 1 and len(api.requests) == 1  # both still up, and nothing reached them

        with replay(tape, stub=[f"POST {api.authority}/orders"]) as session, agent_run("parent"):
            stubbed = _agent(child, fake.openai_url, api.url)
        assert stubbed["child"] == live["child"] and stubbed["curl"] == live["curl"]
        assert session.stats.hits == 2
        assert len(fake.requests) == 1 and len(api.requests) == 1


def test_a_post_from_a_spawnv_passfds_child_is_a_step_of_the_run_and_answered_from_the_tape(
    tmp_path: Path, mitmdump: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """multiprocessing's own helper starts a process by ``_posixsubprocess.fork_exec`` looked up in its module:
    the child gets the block's proxy like any other, its POST a step of the run naming the process; replayed,
    with the server still up, it is refused or answered from the tape (stubbed), 0 requests."""
    monkeypatch.setenv("AGENT_REPLAY_MITMDUMP", mitmdump)
    for name in [k for k in os.environ if k.endswith(("_PROXY", "_proxy"))]:
        monkeypatch.delenv(name)
    tape = tmp_path / "passfds.jsonl"
    with rest_api() as api:
        with record(tape), agent_run("parent"):
            live = post_by_spawnv_passfds(f"{api.url}/orders", '{"sku": "a-1"}', tmp_path)
        assert live.status == 201 and json.loads(live.body) == {"id": "o-77", "sku": "a-1"}
        assert len(api.requests) == 1
        (run,) = load_tape(tape).runs
        (post,) = run.steps
        assert run.agent_name == "parent" and post.tool == f"POST {api.authority}/orders"
        assert int(post.attributes[A.PROCESS_PID]) == live.pid
        assert "curl -sS -X POST" in post.attributes[A.PROCESS_COMMAND]

        with pytest.raises(SideEffectRefused), replay(tape) as session, agent_run("parent"):
            refused = post_by_spawnv_passfds(f"{api.url}/orders", '{"sku": "a-1"}', tmp_path)
        assert refused.status == 403 and "SideEffectRefused" in refused.body
        assert session.stats.child_processes == 1 and len(api.requests) == 1

        with replay(tape, stub=[f"POST {api.authority}/orders"]) as session, agent_run("parent"):
            stubbed = post_by_spawnv_passfds(f"{api.url}/orders", '{"sku": "a-1"}', tmp_path)
        assert (stubbed.status, stubbed.body) == (live.status, live.body)  # the recorded answer
        assert session.stats.hits == 1 and session.stats.child_processes == 1
        assert len(api.requests) == 1  # still up, and nothing reached it
