"""Loopback let through below HTTP is never silent: counted in ``loopback_connections``, warned once."""

from __future__ import annotations

import socket
import time
import warnings
from pathlib import Path

import httpx
import pytest
import requests
from helpers.keepalive_server import keepalive_server
from helpers.otlp_receiver import http_receiver
from helpers.pinged import ping, ping_tape
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_agent_replay import agent_run, model_call, record, replay
from otel_agent_replay.core import ReplayWarning


@pytest.fixture
def recorded(tape: Path) -> Path:
    return ping_tape(tape)


def _raw_http_get(port: int) -> bytes:
    """HTTP spoken over a plain socket, as dspy 3.x's default engine does: no HTTP client to capture."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return sock.recv(1000)


def _loopback_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "loopback_connections" in str(w.message)]


def test_http_over_a_raw_socket_goes_live_but_is_counted_and_warned(recorded: Path) -> None:
    with keepalive_server() as server:
        with warnings.catch_warnings(record=True) as caught, replay(recorded) as session, agent_run("a"):
            warnings.simplefilter("always")
            ping()
            assert _raw_http_get(server.port).startswith(b"HTTP/1.1 200")  # the HTTP capture never saw it
            assert _raw_http_get(server.port).startswith(b"HTTP/1.1 200")
        assert server.seen()[2] == 2
    assert session.stats.loopback_connections == 2 and session.stats.blocked_connections == 0
    [message] = _loopback_warnings(caught)  # once per replay
    assert f"127.0.0.1:{server.port}" in message and "dspy" in message and "litellm" in message


def test_a_pooled_loopback_connection_from_before_the_replay_counts_once(recorded: Path) -> None:
    with keepalive_server() as server:
        pooled = requests.Session()
        url = f"http://127.0.0.1:{server.port}/v1/search"
        pooled.get(url, timeout=2)
        warned = pytest.warns(ReplayWarning, match="loopback_connections")
        with warned, replay(recorded, http=False) as session, agent_run("a"):
            ping()
            assert pooled.get(url, timeout=2).json() == {"ok": True}  # no connect: the send sees it
            assert pooled.get(url, timeout=2).json() == {"ok": True}
        pooled.close()
        assert server.seen()[0] == 1  # one connection, warmed before the replay
    assert session.stats.loopback_connections == 1


def test_loopback_named_in_allow_hosts_is_counted_without_a_warning(recorded: Path) -> None:
    with keepalive_server() as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replay(recorded, allow_hosts=["127.0.0.1"]) as session, agent_run("a"):
            ping()
            _raw_http_get(server.port)
    assert session.stats.loopback_connections == 1
    assert _loopback_warnings(caught) == []


def test_passthrough_http_is_counted_as_passthrough_not_as_loopback(recorded: Path) -> None:
    with keepalive_server() as server:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with replay(recorded, passthrough=[f"127.0.0.1:{server.port}"]) as session, agent_run("a"):
                ping()
                assert httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=2).status_code == 200
        assert server.seen()[2] == 1
    assert session.stats.passthrough_requests == 1 and session.stats.loopback_connections == 0
    assert _loopback_warnings(caught) == []


def test_opentelemetrys_own_export_in_the_agents_thread_is_not_counted(recorded: Path) -> None:
    with http_receiver() as (url, got):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
        tracer = provider.get_tracer("app")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with replay(recorded) as session, agent_run("a"):
                    ping()
                    tracer.start_span("exported in this thread").end()  # the SDK marks its export
                    deadline = time.monotonic() + 5
                    while not got.spans() and time.monotonic() < deadline:
                        time.sleep(0.02)
        finally:
            provider.shutdown()
        assert [s.name for s in got.spans()] == ["exported in this thread"]
    assert session.stats.loopback_connections == 0
    assert _loopback_warnings(caught) == []


def test_a_model_call_the_replay_runs_live_on_purpose_is_not_counted(tape: Path) -> None:
    with keepalive_server() as server:

        @model_call(provider="local", model="raw")
        def ask(question: str) -> dict[str, str]:
            return {"answer": _raw_http_get(server.port).split(b"\r\n", 1)[0].decode()}

        with record(tape), agent_run("a"):
            ask("hi")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with replay(tape, models="live") as session, agent_run("a"):
                assert ask("hi") == {"answer": "HTTP/1.1 200 OK"}  # models="live": it runs, as asked
                _raw_http_get(server.port)  # the same, undecorated: let through unseen
    assert session.stats.live_model_calls == 1 and session.stats.loopback_connections == 1
    assert len(_loopback_warnings(caught)) == 1
