"""A request whose upstream could not be reached when it was recorded (the claude CLI's fixed-host metrics
check on a machine without that host, a service that was down) is replayed as that failure, mitmproxy's
502, and never sent live: the replay's seal holds even when the host is up by then."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from otel_agent_replay import load_tape

Cli = Callable[..., subprocess.CompletedProcess[str]]

CHILD = """
import sys, urllib.error, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=60) as response:
        print("status", response.status, response.read().decode())
except urllib.error.HTTPError as exc:
    print("http error", exc.code, "connect call failed" in exc.read().decode().lower())
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_recorded_connection_failure_is_replayed_as_the_same_502_and_never_sent_live(
    cli: Cli, proxy_env: dict[str, str], tmp_path: Path
) -> None:
    port = _closed_port()
    tape = tmp_path / "down.jsonl"
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    command = ["--", sys.executable, str(child), f"http://127.0.0.1:{port}/status"]

    recorded = cli("record", str(tape), *command, env=proxy_env)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.strip() == "http error 502 True"  # mitmproxy's Bad Gateway: nothing listened there
    (step,) = load_tape(tape).runs[0].steps
    assert step.error is not None and "connect call failed" in step.error.message.lower()

    seen: list[str] = []

    class Up(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"live")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Up)  # the host is up by the replay
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        replayed = cli("replay", str(tape), *command, env=proxy_env)
    finally:
        server.shutdown()
        server.server_close()
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout  # the same failure, from the tape
    assert "1 answered from the tape" in replayed.stderr
    assert "Traceback" not in replayed.stderr
    assert seen == []  # nothing went live
