"""Arize Phoenix, a real OTLP backend, as a process on loopback ports for the end-to-end tests.

``scripts/dev.sh test`` installs Phoenix into a virtual environment of its own and exports
``AGENT_REPLAY_PHOENIX`` (its ``phoenix`` executable). ``start_phoenix`` runs ``phoenix serve`` in a
new process group with ``PHOENIX_HOST=127.0.0.1``, free ``PHOENIX_PORT`` / ``PHOENIX_GRPC_PORT``,
a temporary ``PHOENIX_WORKING_DIR`` and telemetry off, waits for ``/healthz``, and ``stop`` kills
the group. Phoenix binds its gRPC port on every interface and has no setting for it, so the
server is started through a few lines that hand ``grpc.aio`` a loopback address instead.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import orjson
import pytest

from helpers.processes import stop_group

SETUP_HINT = (
    "run the suite with `bash scripts/dev.sh test`, which installs Arize Phoenix into its own venv "
    "(.venv-phoenix) and sets AGENT_REPLAY_PHOENIX; or create a venv, `pip install arize-phoenix` in it and "
    "set AGENT_REPLAY_PHOENIX=/path/to/that/venv/bin/phoenix"
)

# Runs inside Phoenix's venv: `phoenix serve`, with its gRPC server bound to 127.0.0.1.
_LAUNCH = """
import sys
import grpc.aio

_server = grpc.aio.server

def loopback_server(*args, **kwargs):
    server = _server(*args, **kwargs)
    add = server.add_insecure_port
    server.add_insecure_port = lambda address: add("127.0.0.1:" + address.rsplit(":", 1)[1])
    return server

grpc.aio.server = loopback_server
from phoenix.server.main import main
sys.argv = ["phoenix", "serve"]
sys.exit(main())
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Phoenix:
    """A running Phoenix: where to send OTLP and how to read spans back."""

    process: subprocess.Popen[bytes]
    url: str
    grpc_url: str
    log: Path
    started_in: float

    @property
    def otlp_http(self) -> str:
        """The OTLP/HTTP traces endpoint."""
        return f"{self.url}/v1/traces"

    def _get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as answer:
                return int(answer.status), orjson.loads(answer.read())
        except urllib.error.HTTPError as err:
            return int(err.code), None

    def spans(self, project: str, trace_id: str | None = None) -> list[dict[str, Any]]:
        """Every span of a project (of one trace), through ``GET /v1/projects/{project}/spans``."""
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 1000}
            if trace_id:
                params["trace_id"] = trace_id
            if cursor:
                params["cursor"] = cursor
            status, body = self._get(f"/v1/projects/{quote(project)}/spans?{urlencode(params)}")
            if status == 404:
                return []
            assert status == 200, f"Phoenix answered {status} for the spans of {project!r}"
            out.extend(body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return out

    def wait_for_spans(
        self, project: str, trace_id: str | None, count: int, timeout: float = 60
    ) -> list[dict[str, Any]]:
        """The spans once Phoenix has ingested ``count`` of them (it inserts in the background)."""
        deadline = time.monotonic() + timeout
        spans = self.spans(project, trace_id)
        while len(spans) < count and time.monotonic() < deadline:
            time.sleep(0.25)
            spans = self.spans(project, trace_id)
        assert len(spans) >= count, f"Phoenix has {len(spans)} of {count} spans after {timeout}s; log: {self.log}"
        return spans

    def stop(self) -> None:
        """Kill Phoenix's process group and wait for it."""
        stop_group(self.process)


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """The (host, port) pairs a process listens on over TCP, read from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            host_hex, port_hex = fields[1].split(":")
            raw = bytes.fromhex(host_hex)
            if width == 8:
                host = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:
                host = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
            found.add((host, int(port_hex, 16)))
    return found


def phoenix_python() -> Path:
    """The Python of Phoenix's venv (beside ``AGENT_REPLAY_PHOENIX``); fails the test with the setup command."""
    exe = os.environ.get("AGENT_REPLAY_PHOENIX", "")
    if not exe:
        pytest.fail(f"AGENT_REPLAY_PHOENIX is not set, so the Phoenix end-to-end tests cannot run: {SETUP_HINT}")
    python = Path(exe).with_name("python")
    if not Path(exe).is_file() or not python.is_file():
        pytest.fail(f"AGENT_REPLAY_PHOENIX={exe!r} is not the phoenix executable of a venv: {SETUP_HINT}")
    return python


def start_phoenix(workdir: Path, timeout: float = 180) -> Phoenix:
    """Start ``phoenix serve`` on free loopback ports and wait until it answers."""
    python = phoenix_python()
    port, grpc_port = _free_port(), _free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    for name in [n for n in env if n.startswith("OTEL_")]:
        del env[name]  # Phoenix's own instrumentation must not export anywhere
    log = workdir / "phoenix.log"
    started = time.monotonic()
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            [str(python), "-c", _LAUNCH],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    phoenix = Phoenix(process, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{grpc_port}", log, 0.0)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            pytest.fail(f"phoenix serve exited with {process.returncode} before answering:\n{tail}")
        try:
            with urllib.request.urlopen(f"{phoenix.url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    phoenix.started_in = time.monotonic() - started
                    return phoenix
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    phoenix.stop()
    pytest.fail(f"phoenix serve did not answer within {timeout}s; log: {log.read_text(errors='replace')[-3000:]}")
