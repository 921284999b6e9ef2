"""``otel-agent-replay record|replay TAPE -- CMD``: real runtimes (Node 20 with the npm openai SDK, Python,
curl) through the real mitmproxy, against fake servers on 127.0.0.1 that stay up during the replay and
count every request they get."""

from __future__ import annotations

import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme
from helpers.model_server import fake_provider
from helpers.otlp_lines import attrs as _attrs
from helpers.otlp_lines import last_json as _last_json
from helpers.otlp_lines import spans as _spans
from helpers.rest_server import rest_api

from otel_agent_replay import load_tape
from otel_agent_replay.core import attributes as A

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_a_node_agent_is_recorded_and_replayed_sealed(
    cli: Cli, proxy_env: dict[str, str], node_agent: Path, tmp_path: Path
) -> None:
    tape = tmp_path / "node.jsonl"
    with fake_provider() as fake:
        env = {**proxy_env, "OPENAI_BASE_URL": fake.openai_url}
        recorded = cli("record", str(tape), "--", "node", "agent.mjs", env=env, cwd=node_agent)
        assert recorded.returncode == 0, recorded.stderr
        assert len(fake.requests) == 1
        live = _last_json(recorded.stdout)
        assert "hello from node" in live["answer"]

        loaded = load_tape(tape)
        (run,) = loaded.runs
        assert run.agent_name == "node"
        (step,) = run.steps
        assert step.tool == "openai.chat.completions"
        spans = {s["name"]: _attrs(s) for s in _spans(tape)}
        chat = spans["chat gpt-4o-mini"]
        assert chat[A.GEN_AI_USAGE_INPUT_TOKENS] == "12" or int(chat[A.GEN_AI_USAGE_INPUT_TOKENS]) > 0
        assert chat[A.PROCESS_COMMAND] == "node agent.mjs"
        assert int(chat[A.PROCESS_PID]) > 0
        assert "sk-node-agent-key" not in tape.read_text()  # the Authorization header never reaches the tape

        replayed = cli("replay", str(tape), "--", "node", "agent.mjs", env=env, cwd=node_agent)
        assert replayed.returncode == 0, replayed.stderr
        assert _last_json(replayed.stdout) == live
        assert len(fake.requests) == 1  # the fake is still up: nothing reached it

        drifted = cli("replay", str(tape), "--", "node", "agent.mjs", "a changed prompt", env=env, cwd=node_agent)
        assert drifted.returncode == 1, drifted.stderr
        assert "TapeDrift" in drifted.stdout or "drift" in drifted.stderr.lower()
        assert 'messages[0].content: "hello from node" → "a changed prompt"' in drifted.stderr
        assert "otel-agent-replay record" in drifted.stderr  # the fix, in this command's words
        assert _last_json(drifted.stdout)["error"] == "400"  # the SDK raised its own error
        assert len(fake.requests) == 1


def test_a_node_stream_is_recorded_event_by_event_and_replayed(
    cli: Cli, proxy_env: dict[str, str], node_agent: Path, tmp_path: Path
) -> None:
    tape = tmp_path / "stream.jsonl"
    with fake_provider() as fake:
        env = {**proxy_env, "OPENAI_BASE_URL": fake.openai_url}
        recorded = cli("record", str(tape), "--", "node", "stream.mjs", env=env, cwd=node_agent)
        assert recorded.returncode == 0, recorded.stderr
        (step,) = load_tape(tape).runs[0].steps
        events = step.result["events"]
        assert len(events) > 3  # one recorded event per SSE event, not one blob
        assert all(e["text"].startswith("data: ") for e in events)
        replayed = cli("replay", str(tape), "--", "node", "stream.mjs", env=env, cwd=node_agent)
        assert replayed.returncode == 0, replayed.stderr
        assert _last_json(replayed.stdout) == _last_json(recorded.stdout)
        assert len(fake.requests) == 1


# --- a stream passes through unbuffered ---------------------------------------------------------------

GATED_CHILD = """
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as response:
    first = response.readline()
    print("first", first.decode().strip(), flush=True)
    rest = response.read().decode()
print("rest", rest.count("data:"), flush=True)
"""


@pytest.fixture
def gated_stream() -> Iterator[tuple[str, threading.Event, list[str]]]:
    """An SSE server that sends its first event, then waits for the test to say the client got it before it
    sends the last: a proxy that buffered the stream would hold the first event back, and the gate would time out."""
    gate = threading.Event()
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"data: one\n\n")
            self.wfile.flush()
            opened = gate.wait(60)
            self.wfile.write(b"data: two\n\n" if opened else b"data: the-gate-timed-out\n\n")
            self.wfile.write(b"data: three\n\n")
            self.wfile.flush()
            self.close_connection = True

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/events", gate, seen
    finally:
        gate.set()
        server.shutdown()
        server.server_close()


def test_a_stream_reaches_the_child_before_its_last_event_is_sent(
    proxy_env: dict[str, str], tmp_path: Path, gated_stream: tuple[str, threading.Event, list[str]]
) -> None:
    url, gate, _ = gated_stream
    tape = tmp_path / "gated.jsonl"
    child = tmp_path / "gated.py"
    child.write_text(GATED_CHILD)
    command = [
        sys.executable,
        "-m",
        "otel_agent_replay.cli",
        "record",
        str(tape),
        "--",
        sys.executable,
        str(child),
        url,
    ]
    with subprocess.Popen(command, env=proxy_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.strip() == "first data: one"  # the child has the first event while the server still holds the rest
        gate.set()
        rest = proc.stdout.read()
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    assert "rest 2" in rest
    (step,) = load_tape(tape).runs[0].steps
    assert [e["text"] for e in step.result["events"]] == ["data: one\n\n", "data: two\n\n", "data: three\n\n"]


# --- HTTPS, side effects, the CA's key --------------------------------------------------------------

HTTPS_CHILD = """
import json, os, sys, urllib.request
print("bundle", os.environ["SSL_CERT_FILE"], flush=True)
with urllib.request.urlopen(sys.argv[1], timeout=60) as response:
    print(json.dumps({"status": response.status, "body": json.loads(response.read())}), flush=True)
"""


@pytest.fixture
def tls_fake(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """An HTTPS JSON API on 127.0.0.1 with a CA of its own (its certificate names localhost)."""
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    ca_file = tmp_path / "fake-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            body = json.dumps({"path": self.path, "secure": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"https://localhost:{server.server_address[1]}", ca_file, seen
    finally:
        server.shutdown()
        server.server_close()


def test_https_through_the_run_ca_and_its_key_is_gone_after_the_command(
    cli: Cli, proxy_env: dict[str, str], tmp_path: Path, tls_fake: tuple[str, Path, list[str]]
) -> None:
    url, fake_ca, seen = tls_fake
    tape = tmp_path / "https.jsonl"
    child = tmp_path / "https_child.py"
    child.write_text(HTTPS_CHILD)
    env = {**proxy_env, "SSL_CERT_FILE": str(fake_ca)}  # the user's environment trusts the fake's own CA
    target = f"{url}/v1/items?q=tls"
    recorded = cli("record", str(tape), "--", sys.executable, str(child), target, env=env)
    assert recorded.returncode == 0, recorded.stderr
    bundle = Path(recorded.stdout.splitlines()[0].split(" ", 1)[1])
    assert json.loads(recorded.stdout.splitlines()[1]) == {
        "status": 200,
        "body": {"path": "/v1/items?q=tls", "secure": True},
    }
    assert seen == ["/v1/items?q=tls"]
    (step,) = load_tape(tape).runs[0].steps
    assert step.tool == f"GET {url.removeprefix('https://')}/v1/items"
    # the run's folder (the CA with its key, the bundles) is removed with the command
    assert not bundle.parent.exists()
    assert list(Path(proxy_env["TMPDIR"]).iterdir()) == []

    replayed = cli("replay", str(tape), "--", sys.executable, str(child), target, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.splitlines()[1] == recorded.stdout.splitlines()[1]
    assert seen == ["/v1/items?q=tls"]  # still up, and nothing reached it
    assert list(Path(proxy_env["TMPDIR"]).iterdir()) == []


def test_curl_post_is_recorded_and_refused_in_the_replay(cli: Cli, proxy_env: dict[str, str], tmp_path: Path) -> None:
    tape = tmp_path / "curl.jsonl"
    with rest_api() as api:
        script = tmp_path / "tool.sh"
        script.write_text(
            f"curl -sS '{api.url}/items?n=1' && "
            f"curl -sS -X POST -H 'content-type: application/json' -d '{{\"sku\": \"a-1\"}}' "
            f"-w ' %{{http_code}}' {api.url}/orders\n"
        )
        command = ["sh", str(script)]
        recorded = cli("record", str(tape), "--agent", "shell-tool", "--", *command, env=proxy_env)
        assert recorded.returncode == 0, recorded.stderr
        assert len(api.requests) == 2
        run = load_tape(tape).runs[0]
        assert run.agent_name == "shell-tool"
        assert [s.tool for s in run.steps] == [f"GET {api.authority}/items", f"POST {api.authority}/orders"]
        assert [s.side_effect for s in run.steps] == ["read_only", "external"]

        replayed = cli("replay", str(tape), "--agent", "shell-tool", "--", *command, env=proxy_env)
        assert replayed.returncode == 1
        assert replayed.stdout.rstrip().endswith(" 403")  # curl saw the refusal as an HTTP error
        assert "SideEffectRefused" in replayed.stdout
        assert "--stub" in replayed.stderr  # the fix, as a flag of this command
        assert len(api.requests) == 2

        stubbed = cli(
            "replay",
            str(tape),
            "--agent",
            "shell-tool",
            "--stub",
            f"POST {api.authority}/orders",
            "--",
            *command,
            env=proxy_env,
        )
        assert stubbed.returncode == 0, stubbed.stderr
        assert stubbed.stdout == recorded.stdout
        assert len(api.requests) == 2


def test_a_missing_mitmdump_is_said_with_the_way_to_install_it(
    cli: Cli, proxy_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**proxy_env, "AGENT_REPLAY_MITMDUMP": str(tmp_path / "no-such-mitmdump")}
    done = cli("record", str(tmp_path / "t.jsonl"), "--", sys.executable, "-c", "print(1)", env=env)
    assert done.returncode == 2
    assert "pipx install mitmproxy" in done.stderr
    assert "AGENT_REPLAY_MITMDUMP" in done.stderr


def test_no_command_is_a_usage_error(cli: Cli, proxy_env: dict[str, str], tmp_path: Path) -> None:
    done = cli("replay", str(tmp_path / "t.jsonl"), env=proxy_env)
    assert done.returncode == 2
    assert "give the command to run after `--`" in done.stderr


def test_the_child_exit_status_is_the_commands_own(cli: Cli, proxy_env: dict[str, str], tmp_path: Path) -> None:
    done = cli("record", str(tmp_path / "t.jsonl"), "--", sys.executable, "-c", "raise SystemExit(7)", env=proxy_env)
    assert done.returncode == 7, done.stderr
    assert os.path.exists(tmp_path / "t.jsonl")


PYTHON_AGENT = """
import json, sys, openai
prompt = sys.argv[1] if len(sys.argv) > 1 else "hello from python"
answer = openai.OpenAI(max_retries=0).chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
)
print(json.dumps({"answer": answer.choices[0].message.content}), flush=True)
"""


def test_show_diff_and_the_store_read_a_command_tape_like_any_other(
    cli: Cli, proxy_env: dict[str, str], tmp_path: Path
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(PYTHON_AGENT)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    with fake_provider() as fake:
        env = {**proxy_env, "OPENAI_BASE_URL": fake.openai_url, "OPENAI_API_KEY": "sk-" + os.urandom(8).hex()}
        for tape, words in ((first, []), (second, ["a changed prompt"])):
            done = cli("record", str(tape), "--agent", "py-agent", "--", sys.executable, str(agent), *words, env=env)
            assert done.returncode == 0, done.stderr
    (run,) = load_tape(first).runs  # one run per command, named by --agent
    assert run.agent_name == "py-agent"
    assert int(run.attributes[A.PROCESS_PID]) > 0 and str(agent) in run.attributes[A.PROCESS_COMMAND]

    shown = cli("show", str(first), env=proxy_env)
    assert shown.returncode == 0, shown.stderr
    assert "py-agent" in shown.stdout and "gpt-4o-mini" in shown.stdout
    same = cli("diff", str(first), str(first), env=proxy_env)
    assert same.returncode == 0, same.stdout + same.stderr
    changed = cli("diff", str(first), str(second), env=proxy_env)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "a changed prompt" in changed.stdout
    stored = cli("ingest", str(first), str(second), "--db", str(tmp_path / "evidence.db"), env=proxy_env)
    assert stored.returncode == 0, stored.stderr
