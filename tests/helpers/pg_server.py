"""A throwaway PostgreSQL server on 127.0.0.1 for the evidence-store tests, and the store fixtures.

``scripts/dev.sh test`` installs Debian's ``postgresql`` when it is missing and exports
``AGENT_REPLAY_PG_BIN`` (the folder of ``initdb`` and ``postgres``); without it the newest
``/usr/lib/postgresql/<version>/bin`` is used. The cluster lives in a temporary folder: ``initdb``
(trust authentication, no fsync), then ``postgres`` on a free loopback port with its unix socket
in that folder. PostgreSQL refuses to run as root, so as root both run as the ``postgres`` system
user (``setpriv``), the folder chowned to it. The server is stopped at the end of the session.

``store_location`` is parametrized: each test that takes it runs on a SQLite file and on a fresh
database of that server.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

SETUP_HINT = "run the tests with `bash scripts/dev.sh test`, which installs Debian's postgresql package"


def pg_bin() -> Path:
    """The folder with ``initdb`` and ``postgres``; fails the test (never skips) when there is none."""
    given = os.environ.get("AGENT_REPLAY_PG_BIN", "")
    candidates = (
        [Path(given)]
        if given
        else sorted(
            Path("/usr/lib/postgresql").glob("*/bin"),
            key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        )[::-1]
    )
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    where = f"AGENT_REPLAY_PG_BIN={given!r}" if given else "/usr/lib/postgresql/<version>/bin"
    pytest.fail(f"PostgreSQL server binaries (initdb, postgres) not found in {where}: {SETUP_HINT}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    """A running cluster: its port, folder and process."""

    port: int
    root: Path
    process: subprocess.Popen[bytes]

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        name = "store_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _as_postgres() -> list[str]:
    if os.geteuid() != 0:
        return []
    user = pwd.getpwnam("postgres")
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--"]


def start_postgres(timeout: float = 60) -> PgServer:
    """initdb and start a cluster on a free loopback port; returns once it accepts connections."""
    bindir = pg_bin()
    root = Path(tempfile.mkdtemp(prefix="agent-replay-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    prefix = _as_postgres()
    if prefix:
        user = pwd.getpwnam("postgres")
        for path in (root, sock):
            os.chown(path, user.pw_uid, user.pw_gid)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    init = subprocess.run(
        [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ],
        capture_output=True,
        env=env,
        cwd=root,
        check=False,
    )
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"initdb failed ({init.returncode}): {init.stderr.decode(errors='replace')[-2000:]}")
    port = _free_port()
    log = open(root / "postgres.log", "wb")  # noqa: SIM115 - the server writes it until stop()
    process = subprocess.Popen(
        [
            *prefix,
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-k",
            str(sock),
            "-F",
            "-c",
            "max_connections=50",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=root,
    )
    server = PgServer(port, root, process)
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            text = (root / "postgres.log").read_text(errors="replace")[-2000:]
            server.stop()
            pytest.fail(f"postgres exited with {process.returncode} before accepting connections:\n{text}")
        try:
            with psycopg.connect(server.url(), connect_timeout=2):
                return server
        except psycopg.OperationalError as err:
            last = err
            time.sleep(0.1)
    server.stop()
    pytest.fail(f"postgres did not accept connections on 127.0.0.1:{port} within {timeout}s: {last}")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the test session."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: Any, tmp_path: Path) -> str:
    """Where a test's evidence store lives: a new SQLite file, or a new database on the test server."""
    if request.param == "sqlite":
        return str(tmp_path / "evidence.db")
    server: PgServer = request.getfixturevalue("pg_server")
    return server.new_database()
