"""The network guard: in a strict replay a connection to a host not allowed is stopped before any byte goes out.

The HTTP capture answers HTTP from the tape before a socket is opened, so these replays take it out
(``http=False``) to exercise the socket layer under it.
"""

from __future__ import annotations

import asyncio
import contextvars
import socket
import ssl
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
from helpers.counting_server import Counted, counting_server
from helpers.otlp_receiver import http_receiver
from helpers.pinged import ping, ping_tape
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_agent_replay import (
    AgentReplayError,
    ConfigurationError,
    NetworkBlocked,
    ReplayDivergence,
    agent_run,
    replay,
)
from otel_agent_replay.core import ReplayWarning
from otel_agent_replay.seal import _audit


@pytest.fixture
def recorded(tape: Path) -> Path:
    return ping_tape(tape)


def _clients(port: int) -> dict[str, Callable[[], Any]]:
    url = f"http://127.0.0.1:{port}/v1/search"  # not a model route: the HTTP capture would serve that one

    def raw() -> Any:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return sock.recv(100)

    def raw_connect_ex() -> Any:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            return sock.connect_ex(("127.0.0.1", port))

    return {
        "httpx": lambda: httpx.post(url, json={"model": "m"}, timeout=2).status_code,
        "requests": lambda: requests.post(url, json={"model": "m"}, timeout=2).status_code,
        "urllib": lambda: urllib.request.urlopen(url, data=b"{}", timeout=2).status,
        "raw socket": raw,
        "connect_ex": raw_connect_ex,
    }


CLIENTS = ["httpx", "requests", "urllib", "raw socket", "connect_ex"]


def _served_nothing(server: Counted) -> bool:
    time.sleep(0.1)  # a connection in flight would be accepted by now
    return server.connections == 0 and server.received == 0


def test_network_blocked_is_a_replay_error_and_an_assertion() -> None:
    assert issubclass(NetworkBlocked, ReplayDivergence)
    assert issubclass(NetworkBlocked, AgentReplayError) and issubclass(NetworkBlocked, AssertionError)


@pytest.mark.parametrize("client", CLIENTS)
def test_an_undecorated_call_is_blocked_before_the_server_sees_a_byte(recorded: Path, client: str) -> None:
    with counting_server() as server:
        call = _clients(server.port)[client]
        # swallowed or not, the replay fails at its end
        sealed = replay(recorded, http=False, allow_hosts=[])
        with pytest.raises(NetworkBlocked) as again, sealed as session, agent_run("a"):
            ping()
            with pytest.raises(NetworkBlocked) as caught:
                call()
        assert _served_nothing(server)
    assert again.value is caught.value
    error = caught.value
    assert error.host == "127.0.0.1" and error.port == server.port
    message = str(error)
    assert f"127.0.0.1:{server.port}" in message and "allow_hosts=['127.0.0.1']" in message
    assert "network='allow'" in message and "@tool" in message
    assert session.stats.blocked_connections == 1 and session.stats["blocked_connections"] == 1
    assert [d.kind.value for d in session.report] == ["blocked"]


@pytest.mark.parametrize("client", CLIENTS)
def test_loopback_is_allowed_by_default_counted_and_warned(recorded: Path, client: str) -> None:
    with counting_server() as server:
        with pytest.warns(ReplayWarning) as warned, replay(recorded, http=False) as session, agent_run("a"):
            ping()
            _clients(server.port)[client]()
        time.sleep(0.05)
        assert server.connections == 1
    assert session.stats.blocked_connections == 0
    assert session.stats.loopback_connections == 1 and session.stats["loopback_connections"] == 1
    [warning] = [w for w in warned if "loopback_connections" in str(w.message)]
    message = str(warning.message)
    assert f"127.0.0.1:{server.port}" in message and "litellm" in message and "allow_hosts=[]" in message
    assert "otel_agent_replay" not in warning.filename  # it points at the code that connected, not at ours


@pytest.mark.parametrize("client", CLIENTS)
def test_blocked_in_a_worker_thread_given_a_copy_of_the_context(recorded: Path, client: str) -> None:
    with counting_server() as server:
        call = _clients(server.port)[client]
        with pytest.raises(NetworkBlocked), replay(recorded, http=False, allow_hosts=[]) as session, agent_run("a"):
            ping()
            with ThreadPoolExecutor(1) as pool:
                future = pool.submit(contextvars.copy_context().run, call)
                with pytest.raises(NetworkBlocked):
                    future.result()
        assert _served_nothing(server)
    assert session.stats.blocked_connections == 1


def test_blocked_in_an_asyncio_task(recorded: Path) -> None:
    async def agent(port: int) -> None:
        async def fetch() -> None:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()

        task = asyncio.create_task(fetch())
        with pytest.raises(NetworkBlocked):
            await task
        async with aiohttp.ClientSession() as http:
            with pytest.raises(NetworkBlocked):
                await http.get(f"http://127.0.0.1:{port}/")
        async with httpx.AsyncClient() as client:
            # anyio (under httpx's async client) races connection attempts in a task group, so the
            # agent sees the guard's error inside an ExceptionGroup; the replay still ends with it.
            with pytest.raises(Exception) as group:  # an ExceptionGroup (a builtin only from 3.11)
                await client.get(f"http://127.0.0.1:{port}/")
            assert [type(e) for e in getattr(group.value, "exceptions", ())] == [NetworkBlocked]

    with counting_server() as server:
        with pytest.raises(NetworkBlocked), replay(recorded, http=False, allow_hosts=[]) as session, agent_run("a"):
            ping()
            asyncio.run(agent(server.port))
        assert _served_nothing(server)
    assert session.stats.blocked_connections == 3


def test_a_non_loopback_address_is_blocked_before_connect(recorded: Path) -> None:
    target = ("203.0.113.7", 443)  # TEST-NET-3: never reached, the guard raises before the connect call
    with pytest.raises(NetworkBlocked), replay(recorded, http=False) as session, agent_run("a"):
        ping()
        guard = session.network_guard
        assert guard is not None and not guard.allows(target[0]) and guard.allows("127.0.0.1")
        with pytest.raises(NetworkBlocked) as caught:
            socket.create_connection(target, timeout=0.5)
        with pytest.raises(NetworkBlocked):
            httpx.get("https://example.invalid/", timeout=0.5)  # a name not allowed is not even looked up
    assert caught.value.host == "203.0.113.7" and caught.value.port == 443
    assert session.stats.blocked_connections == 2


def test_allow_hosts_names_and_addresses(recorded: Path) -> None:
    with counting_server() as server:
        with replay(recorded, http=False, allow_hosts=["localhost"]), agent_run("a"):
            ping()
            httpx.get(f"http://localhost:{server.port}/", timeout=2)  # the name, and what it resolves to
        with replay(recorded, http=False, allow_hosts=["127.0.0.1"]), agent_run("a"):
            ping()
            requests.get(f"http://127.0.0.1:{server.port}/", timeout=2)
        time.sleep(0.05)
        assert server.connections == 2


def test_network_allow_turns_the_guard_off_and_recording_modes_have_none(recorded: Path, tmp_path: Path) -> None:
    with counting_server() as server:
        with replay(recorded, http=False, allow_hosts=[], network="allow") as session, agent_run("a"):
            ping()
            httpx.get(f"http://127.0.0.1:{server.port}/", timeout=2)
        assert session.network_guard is None
        with replay(tmp_path / "new.jsonl", mode="once", allow_hosts=[]) as recording, agent_run("a"):
            ping()
            httpx.get(f"http://127.0.0.1:{server.port}/", timeout=2)
        assert recording.network_guard is None
        time.sleep(0.05)
        assert server.connections == 2
    with pytest.raises(ConfigurationError, match="network"):
        replay(recorded, http=False, network="maybe")  # type: ignore[arg-type]


def test_the_guard_is_in_place_only_while_a_guarded_replay_runs(recorded: Path) -> None:
    send, getaddrinfo, ssl_send = socket.socket.send, socket.getaddrinfo, ssl.SSLSocket.send
    with replay(recorded, http=False), agent_run("a"):
        ping()
        assert socket.socket.send is not send and ssl.SSLSocket.send is not ssl_send
        assert {"socket.connect", "socket.sendto", "socket.sendmsg"} <= _audit.watched()
        with pytest.warns(ReplayWarning, match="still active"), replay(recorded, http=False), agent_run("a"):
            ping()  # nested: counted
        assert socket.socket.send is not send
    assert socket.socket.send is send and socket.getaddrinfo is getaddrinfo and ssl.SSLSocket.send is ssl_send
    assert "send" not in socket.socket.__dict__ and "sendall" not in socket.socket.__dict__
    assert not {e for e in _audit.watched() if e.startswith("socket.")}


def test_an_otlp_exporter_thread_started_before_the_replay_still_exports(recorded: Path) -> None:
    with http_receiver() as (url, got):
        provider = TracerProvider()
        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces"), schedule_delay_millis=50)
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("background")
        try:
            with replay(recorded, http=False, allow_hosts=[]), agent_run("a"):  # even loopback is blocked here
                ping()
                tracer.start_span("from the app").end()
                deadline = time.monotonic() + 5
                while not got.spans() and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert [s.name for s in got.spans()] == ["from the app"]
        finally:
            provider.shutdown()
