"""Jaeger v2 and the OpenTelemetry Collector, the real Go programs, as processes on loopback ports.

``scripts/dev.sh test`` builds both with ``scripts/servers.sh`` (cached outside the clone) and exports
``AGENT_REPLAY_JAEGER`` and ``AGENT_REPLAY_OTELCOL``. ``start_jaeger`` and ``start_collector`` run
them with the configuration files docker-compose.yml uses (``compose/``), on free 127.0.0.1 ports
given through the variables those files read, in a new process group; ``stop`` kills the group.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from helpers.processes import stop_group

ROOT = Path(__file__).resolve().parents[2]
JAEGER_CONFIG = ROOT / "compose" / "jaeger.yaml"
COLLECTOR_CONFIG = ROOT / "compose" / "otel-collector.yaml"
SETUP_HINT = (
    "run the suite with `bash scripts/dev.sh test`, which builds Jaeger, the Collector and gitleaks from their Go "
    "modules with scripts/servers.sh (once, cached outside the clone) and sets AGENT_REPLAY_JAEGER, "
    "AGENT_REPLAY_OTELCOL and AGENT_REPLAY_GITLEAKS; or run `bash scripts/servers.sh build` and set each, e.g. "
    "AGENT_REPLAY_GITLEAKS=$(bash scripts/servers.sh path gitleaks)"
)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_binary(variable: str) -> Path:
    """The executable named by ``variable``; fails the test with the setup command when it is not there."""
    value = os.environ.get(variable, "")
    if not value:
        pytest.fail(f"{variable} is not set, so the tests against the real servers cannot run: {SETUP_HINT}")
    path = Path(value)
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"{variable}={value!r} is not an executable file: {SETUP_HINT}")
    return path


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Server:
    """A running server process: its ports (by the variable that set them) and its log."""

    process: subprocess.Popen[bytes]
    ports: dict[str, int]
    log: Path
    started_in: float = 0.0

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        """Stop the process group (SIGTERM, then SIGKILL) and wait for it."""
        stop_group(self.process)


def _start(
    argv: list[str], env: dict[str, str], ports: dict[str, int], log: Path, name: str, ready: Any, timeout: float
) -> subprocess.Popen[bytes]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    started = time.monotonic()
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            argv,
            env={**clean, **env, **{k: str(v) for k, v in ports.items()}},
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"{name} exited with {process.returncode} before it was ready:\n"
                f"{log.read_text(errors='replace')[-4000:]}"
            )
        if all(_accepts(port) for port in ports.values()) and ready():
            return process
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=20)
    pytest.fail(f"{name} was not ready within {timeout}s:\n{log.read_text(errors='replace')[-4000:]}")


@dataclass
class Jaeger(Server):
    """A running Jaeger v2: where OTLP goes in and where the query API answers."""

    badger_dir: Path = field(default_factory=Path)

    @property
    def query_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['JAEGER_QUERY_HTTP_PORT']}"

    @property
    def otlp_http(self) -> str:
        return f"http://127.0.0.1:{self.ports['JAEGER_OTLP_HTTP_PORT']}"

    @property
    def otlp_grpc(self) -> str:
        return f"http://127.0.0.1:{self.ports['JAEGER_OTLP_GRPC_PORT']}"

    @property
    def otlp_grpc_address(self) -> str:
        return f"127.0.0.1:{self.ports['JAEGER_OTLP_GRPC_PORT']}"

    def get(self, path: str) -> tuple[int, Any]:
        """GET a query API path: the status and the decoded JSON (None when it is not JSON)."""
        try:
            with urllib.request.urlopen(self.query_url + path, timeout=10) as answer:
                return int(answer.status), orjson.loads(answer.read())
        except urllib.error.HTTPError as err:
            body = err.read()
            try:
                return int(err.code), orjson.loads(body)
            except orjson.JSONDecodeError:
                return int(err.code), None

    def v3_trace(self, trace_id: str, count: int, timeout: float = 30) -> list[dict[str, Any]]:
        """The trace's OTLP JSON documents from ``/api/v3/traces/{id}`` once it has ``count`` spans."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            status, body = self.get(f"/api/v3/traces/{trace_id}")
            if status == 200:
                docs = [body["result"]]
                seen = sum(
                    len(ss.get("spans", []))
                    for rs in body["result"].get("resourceSpans", [])
                    for ss in rs.get("scopeSpans", [])
                )
                if seen >= count:
                    return docs
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Jaeger has {seen} of {count} spans of trace {trace_id} after {timeout}s "
                    f"(last answer {status}); log:\n{self.log_tail()}"
                )
            time.sleep(0.2)

    def classic_trace(self, trace_id: str) -> dict[str, Any]:
        """The classic ``/api/traces/{id}`` answer."""
        status, body = self.get(f"/api/traces/{trace_id}")
        assert status == 200, f"/api/traces/{trace_id} answered {status}: {body}"
        assert isinstance(body, dict)
        return body


def start_jaeger(workdir: Path, timeout: float = 60) -> Jaeger:
    """Start Jaeger with compose/jaeger.yaml (Badger in ``workdir``) on free loopback ports."""
    binary = server_binary("AGENT_REPLAY_JAEGER")
    workdir.mkdir(parents=True, exist_ok=True)
    ports = {
        name: free_port()
        for name in (
            "JAEGER_OTLP_GRPC_PORT",
            "JAEGER_OTLP_HTTP_PORT",
            "JAEGER_QUERY_HTTP_PORT",
            "JAEGER_QUERY_GRPC_PORT",
        )
    }
    badger = workdir / "badger"
    env = {"JAEGER_LISTEN_HOST": "127.0.0.1", "JAEGER_BADGER_DIR": str(badger)}
    log = workdir / "jaeger.log"
    started = time.monotonic()
    query = f"http://127.0.0.1:{ports['JAEGER_QUERY_HTTP_PORT']}/api/services"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(query, timeout=1) as answer:
                return int(answer.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    process = _start([str(binary), "--config", str(JAEGER_CONFIG)], env, ports, log, "jaeger", ready, timeout)
    return Jaeger(process, ports, log, time.monotonic() - started, badger)


@dataclass
class Collector(Server):
    """A running Collector: its OTLP receivers, the folder its otlpjsonfile receiver reads, its output file."""

    inbox: Path = field(default_factory=Path)
    out: Path = field(default_factory=Path)

    @property
    def otlp_http(self) -> str:
        return f"http://127.0.0.1:{self.ports['COLLECTOR_OTLP_HTTP_PORT']}"

    @property
    def otlp_grpc(self) -> str:
        return f"http://127.0.0.1:{self.ports['COLLECTOR_OTLP_GRPC_PORT']}"


def start_collector(workdir: Path, jaeger: Jaeger, timeout: float = 60) -> Collector:
    """Start the Collector with compose/otel-collector.yaml, forwarding to ``jaeger``, on free loopback ports."""
    binary = server_binary("AGENT_REPLAY_OTELCOL")
    workdir.mkdir(parents=True, exist_ok=True)
    inbox, out = workdir / "in", workdir / "out" / "traces.jsonl"
    inbox.mkdir(exist_ok=True)
    out.parent.mkdir(exist_ok=True)
    ports = {name: free_port() for name in ("COLLECTOR_OTLP_GRPC_PORT", "COLLECTOR_OTLP_HTTP_PORT")}
    env = {
        "COLLECTOR_LISTEN_HOST": "127.0.0.1",
        "COLLECTOR_IN": str(inbox),
        "COLLECTOR_OUT": str(out),
        "COLLECTOR_JAEGER_ENDPOINT": jaeger.otlp_grpc_address,
    }
    log = workdir / "collector.log"
    started = time.monotonic()
    process = _start(
        [str(binary), "--config", str(COLLECTOR_CONFIG)], env, ports, log, "the Collector", lambda: True, timeout
    )
    return Collector(process, ports, log, time.monotonic() - started, inbox, out)
