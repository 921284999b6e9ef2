"""A replay defers the trust store a client loads when it is built (``seal/_trust``): nothing is
parsed until the context is used, and a context that does connect verifies exactly as it would have.

The TLS server is real (``keepalive_server`` on 127.0.0.1 with a certificate from trustme's CA).
"""

from __future__ import annotations

import queue
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from helpers.keepalive_server import KeepAlive, keepalive_server
from helpers.pinged import ping, ping_tape

from otel_agent_replay import agent_run, record, replay
from otel_agent_replay.seal import DeferredTrustContext

_C_CONTEXT: Any = ssl.SSLContext.__mro__[1]  # the C class: its methods read the store as it is


@pytest.fixture
def recorded(tape: Path) -> Path:
    return ping_tape(tape)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA) -> Iterator[str]:
    with ca.cert_pem.tempfile() as path:
        yield path


@pytest.fixture
def tls_server(ca: trustme.CA) -> Iterator[KeepAlive]:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    with keepalive_server(tls=server_context) as server:
        yield server


def _loaded(context: ssl.SSLContext) -> int:
    """How many CA certificates the context holds now, read without triggering a deferred load."""
    return int(_C_CONTEXT.cert_store_stats(context)["x509_ca"])


def test_a_context_built_in_a_replay_loads_its_cas_when_first_read(recorded: Path, ca_file: str) -> None:
    with replay(recorded, http=False), agent_run("a"):
        ping()
        context = ssl.create_default_context(cafile=ca_file)
        system = ssl.create_default_context()  # set_default_verify_paths: the system bundle
        client = httpx.Client()  # certifi's bundle, loaded by httpx when the client is made
        assert isinstance(context, ssl.SSLContext) and type(context) is DeferredTrustContext
        assert _loaded(context) == 0 and _loaded(system) == 0
        assert context.cert_store_stats()["x509_ca"] == 1  # read: loaded first
        assert len(system.get_ca_certs()) > 10
    pool_context = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert type(pool_context) is DeferredTrustContext and _loaded(pool_context) == 0
    client.close()


def test_a_deferred_context_verifies_as_it_would_have(recorded: Path, ca_file: str, tls_server: KeepAlive) -> None:
    url = f"https://127.0.0.1:{tls_server.port}/v1/search"
    with replay(recorded, http=False, allow_hosts=["127.0.0.1"]), agent_run("a"):
        ping()
        trusting = ssl.create_default_context(cafile=ca_file)
        with httpx.Client(verify=trusting) as client:  # connects inside the replay: loaded then
            assert client.get(url, timeout=5).status_code == 200
        later = ssl.create_default_context(cafile=ca_file)
        other_ca = ssl.create_default_context()  # the system's CAs, which do not include trustme's
    assert _loaded(later) == 0
    with httpx.Client(verify=later) as client:  # after the replay: loaded at its first connection
        assert client.get(url, timeout=5).status_code == 200
    with httpx.Client(verify=other_ca) as client, pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get(url, timeout=5)
    assert tls_server.seen()[2] == 2


def test_a_missing_ca_file_fails_at_once(recorded: Path, tmp_path: Path) -> None:
    with replay(recorded, http=False), agent_run("a"):
        ping()
        with pytest.raises(FileNotFoundError):
            ssl.create_default_context(cafile=str(tmp_path / "no-such-bundle.pem"))


def test_loads_are_eager_outside_a_replay_its_context_and_a_recording(
    recorded: Path, ca_file: str, tmp_path: Path
) -> None:
    asked: queue.Queue[str] = queue.Queue()
    built: queue.Queue[ssl.SSLContext] = queue.Queue()

    def background() -> None:  # started before the replay: not in its context
        built.put(ssl.create_default_context(cafile=asked.get(timeout=10)))

    worker = threading.Thread(target=background)
    worker.start()
    with replay(recorded, http=False), agent_run("a"):
        ping()
        asked.put(ca_file)
        outside = built.get(timeout=10)
    worker.join()
    assert type(outside) is ssl.SSLContext and _loaded(outside) == 1
    assert "load_verify_locations" not in ssl.SSLContext.__dict__  # the patch is gone with the replay
    after = ssl.create_default_context(cafile=ca_file)
    assert type(after) is ssl.SSLContext and _loaded(after) == 1
    with record(tmp_path / "again.jsonl"), agent_run("a"):
        recording = ssl.create_default_context(cafile=ca_file)
    assert type(recording) is ssl.SSLContext and _loaded(recording) == 1


def test_threads_that_connect_at_once_all_verify(recorded: Path, ca_file: str, tls_server: KeepAlive) -> None:
    """The first use loads the store while the others wait for it: none connects with a half-loaded one."""
    with replay(recorded, http=False), agent_run("a"):
        ping()
        shared = ssl.create_default_context(cafile=ca_file)
        for _ in range(3):
            shared.load_verify_locations(cafile=ca_file)  # more noted loads: a longer load to race against
    url = f"https://127.0.0.1:{tls_server.port}/v1/search"
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def get() -> None:
        try:
            with httpx.Client(verify=shared) as client:
                barrier.wait(10)
                client.get(url, timeout=10)
        except BaseException as exc:  # collected: the assertion below names it
            errors.append(exc)

    workers = [threading.Thread(target=get) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert errors == [] and _loaded(shared) == 1
