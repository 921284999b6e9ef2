"""The ``http.client`` capture point with the clients on it (urllib.request, urllib3, requests):
a REST tool's requests are HTTP steps, replayed strictly with its server still up and receiving
nothing, warmed keep-alive pools included; no credential of the request reaches the tape."""

from __future__ import annotations

import http.client
import json
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import urllib3
from helpers.clock import VirtualClock, virtual_clock
from helpers.counted_rest_server import rest_server
from helpers.counting_http import Counter
from helpers.model_server import fake_provider
from helpers.rawtape import raw_spans

from otel_agent_replay import TapeMiss, agent_run, record, replay
from otel_agent_replay.core import SideEffectRefused
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations.clients._http_client import parse_request

TOKEN = "tok-Zq8Lr2Vx9Kp4Wm7Ns1Bt"
COOKIE = "sid-Hd3Jf6Gk0Lq5Pw8Xc2Vb"
URL_KEY = "key-Ty7Ui4Op1As9Df3Gh6Jk"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Cookie": f"session={COOKIE}", "Content-Type": "application/json"}

Send = Callable[[str, str, Any], tuple[int, Any]]
"""(method, url, JSON body or None) → (status, decoded JSON)."""


def _with_requests(session: requests.Session) -> Send:
    def send(method: str, url: str, body: Any) -> tuple[int, Any]:
        response = session.request(method, url, json=body, headers=HEADERS)
        return response.status_code, response.json()

    return send


def _with_urllib3(pool: urllib3.PoolManager) -> Send:
    def send(method: str, url: str, body: Any) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        response = pool.request(method, url, body=data, headers=HEADERS)
        return response.status, json.loads(response.data)

    return send


def _with_urllib(method: str, url: str, body: Any) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=HEADERS, method=method)) as response:
        return int(response.status), json.loads(response.read())


CLIENTS: dict[str, Callable[[], Send]] = {
    "requests": lambda: _with_requests(requests.Session()),
    "urllib3": lambda: _with_urllib3(urllib3.PoolManager()),
    "urllib.request": lambda: _with_urllib,
}


def _search(send: Send, server: Counter, q: str) -> tuple[int, Any]:
    return send("GET", f"{server.url}/items?q={urllib.parse.quote(q)}&key={URL_KEY}", None)


def _create(send: Send, server: Counter) -> tuple[int, Any]:
    return send("POST", f"{server.url}/items", {"name": "new item"})


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_rest_tool_get_is_served_from_the_tape_and_its_post_refused_with_the_server_still_up(
    tape: Path, client: str
) -> None:
    with rest_server() as server:
        send = CLIENTS[client]()
        with record(tape), agent_run("rest"):
            found = _search(send, server, "item 2")
            created = _create(send, server)
        assert len(server.requests) == 2
        assert server.requests[0][2]["authorization"] == f"Bearer {TOKEN}"  # the credentials were sent live
        before = (len(server.requests), server.received)
        send = CLIENTS[client]()
        with pytest.raises(SideEffectRefused, match=r"POST 127\.0\.0\.1:"), replay(tape) as session:
            assert _search(send, server, "item 2") == found
            _create(send, server)
        assert (len(server.requests), server.received) == before  # not a byte reached the still running server
        with replay(tape, stub=(f"POST 127.0.0.1:{server.port}/items",)) as stubbed:
            assert _search(send, server, "item 2") == found
            assert _create(send, server) == created
        assert (len(server.requests), server.received) == before
    assert found == (200, {"items": [{"id": 2, "name": "item 2", "tags": ["a", "b"]}], "query": "item 2"})
    assert created == (201, {"id": 99, "name": "new item"})
    assert session.stats.hits == 1 and session.stats.refused_side_effects == 1
    assert stubbed.stats.hits == 2 and stubbed.stats.stubbed_side_effects == 1
    steps = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "http"]
    assert [s.attrs[A.GEN_AI_TOOL_NAME] for s in steps] == [
        f"GET 127.0.0.1:{server.port}/items",
        f"POST 127.0.0.1:{server.port}/items",
    ]


@pytest.mark.parametrize("client", list(CLIENTS))
def test_credentials_in_headers_and_the_url_never_reach_the_tape(tape: Path, client: str) -> None:
    with rest_server() as server:
        send = CLIENTS[client]()
        with record(tape), agent_run("rest"):
            _search(send, server, "item")
        sent = server.requests[0]
    assert URL_KEY in sent[1] and sent[2]["cookie"] == f"session={COOKIE}"  # all three went out live
    data = tape.read_bytes()
    for secret in (TOKEN, COOKIE, URL_KEY, "server-secret"):  # the last one: the server's Set-Cookie
        assert secret.encode() not in data, secret


def test_warmed_keep_alive_pools_are_answered_from_the_tape_with_not_a_byte_sent(tape: Path) -> None:
    with rest_server() as server:
        session, pool = requests.Session(), urllib3.PoolManager()
        warm_session = session.get(f"{server.url}/items?q=item 1").json()  # pools warmed before any block
        warm_pool = json.loads(pool.request("GET", f"{server.url}/items?q=item 1").data)
        assert server.connections == 2
        with record(tape), agent_run("warm"):
            recorded = (_with_requests(session)("GET", f"{server.url}/items?q=item 3", None),)
            recorded += (_with_urllib3(pool)("GET", f"{server.url}/items?q=item 4", None),)
        assert server.connections == 2  # recording went over the same warm connections
        before = (len(server.requests), server.received)
        with replay(tape) as replayed:
            again = (_with_requests(session)("GET", f"{server.url}/items?q=item 3", None),)
            again += (_with_urllib3(pool)("GET", f"{server.url}/items?q=item 4", None),)
        assert (len(server.requests), server.received, server.connections) == (*before, 2)
        # the warm connections were left untouched: they serve live requests again after the replay
        assert session.get(f"{server.url}/items?q=item 1").json() == warm_session
        assert json.loads(pool.request("GET", f"{server.url}/items?q=item 1").data) == warm_pool
        assert server.connections == 2
    assert again == recorded and recorded[0][1]["query"] == "item 3"
    assert replayed.stats.hits == 2 and replayed.stats.blocked_connections == 0


def test_an_unrecorded_request_to_a_loopback_server_is_a_miss_with_nothing_sent(tape: Path) -> None:
    with rest_server() as server:
        session = requests.Session()
        with record(tape), agent_run("rest"):
            session.get(f"{server.url}/items?q=item 1")
        before = (len(server.requests), server.received, server.connections)
        with pytest.raises(TapeMiss, match=f"GET 127.0.0.1:{server.port}/items/7"), replay(tape):
            session.get(f"{server.url}/items/7")
        assert (len(server.requests), server.received, server.connections) == before


def test_an_sse_stream_passes_chunk_by_chunk_and_replays_byte_for_byte(tape: Path) -> None:
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "count to three"}], "stream": True}

    def chunks(url: str) -> list[bytes]:
        response = requests.post(url + "/v1/chat/completions", json=body, stream=True)
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(response.iter_content(chunk_size=None))

    with fake_provider() as fp:
        with record(tape), agent_run("sse"):
            live = chunks(fp.url)
        with replay(tape) as session:
            replayed = chunks(fp.url)
        assert len(fp.requests) == 1
    assert b"".join(replayed) == b"".join(live)
    assert len(replayed) == b"".join(live).count(b"\n\n")  # one chunk per event, as recorded
    assert session.stats.hits == 1
    [step] = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert step.attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop"]  # the events were seen as the client read them


def test_error_statuses_raise_each_clients_own_error_on_replay(tape: Path) -> None:
    with rest_server() as server:
        url = f"{server.url}/nowhere"
        with record(tape), agent_run("errors"):
            live = requests.get(url)
            with pytest.raises(urllib.error.HTTPError) as live_error:
                urllib.request.urlopen(url)
        before = server.received
        with replay(tape):
            again = requests.get(url)
            with pytest.raises(requests.HTTPError):
                again.raise_for_status()
            with pytest.raises(urllib.error.HTTPError) as replayed_error:
                urllib.request.urlopen(url)
        assert server.received == before
    assert (again.status_code, again.json()) == (live.status_code, live.json()) == (404, {"error": "not found"})
    assert replayed_error.value.code == live_error.value.code == 404


def test_nothing_stays_patched_after_a_block(tape: Path) -> None:
    methods = ("putrequest", "send", "getresponse")
    before = [http.client.HTTPConnection.__dict__[m] for m in methods]
    pool_before = urllib3.connectionpool.HTTPSConnectionPool.__dict__["_validate_conn"]
    with rest_server() as server:
        with record(tape), agent_run("rest"):
            assert http.client.HTTPConnection.__dict__["send"] is not before[1]
            requests.get(f"{server.url}/items")
        with replay(tape):
            requests.get(f"{server.url}/items")
    assert [http.client.HTTPConnection.__dict__[m] for m in methods] == before
    assert urllib3.connectionpool.HTTPSConnectionPool.__dict__["_validate_conn"] is pool_before


def test_a_request_is_read_back_from_its_bytes_whatever_its_body_framing() -> None:
    class Conn:
        host, port, default_port = "api.example.com", 443, 443

    chunked = b"POST /v1/x?a=1 HTTP/1.1\r\nHost: api.example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked += b"3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n"
    request = parse_request(Conn(), chunked)
    assert request is not None
    assert (request.method, request.scheme, request.host, request.port) == ("POST", "https", "api.example.com", 443)
    assert (request.path, request.query, request.body) == ("/v1/x", "a=1", b"abcde")
    proxied = parse_request(Conn(), b"GET http://other.test:8080/p HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi!")
    assert proxied is not None
    assert (proxied.host, proxied.port, proxied.path, proxied.body) == ("other.test", 8080, "/p", b"hi")
    assert parse_request(Conn(), b"\x16\x03\x01 not http") is None


def test_a_gzip_body_is_recorded_as_readable_json_and_replayed_to_the_same_value(tape: Path) -> None:
    with rest_server() as server:
        url = f"{server.url}/report"
        pool = urllib3.PoolManager()
        with record(tape), agent_run("gzip"):
            live = (requests.get(url).json(), json.loads(pool.request("GET", url).data))
        before = server.received
        with replay(tape):
            again = (requests.get(url).json(), json.loads(urllib3.PoolManager().request("GET", url).data))
        assert server.received == before
    assert again == live and live[0]["report"][0]["name"] == "item 1"
    steps = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "http"]
    result = json.loads(steps[0].attrs[A.GEN_AI_TOOL_CALL_RESULT])
    assert result["body"] == live[0] and "content-encoding" not in result["headers"]


def test_a_paced_replay_hands_out_each_event_at_its_recorded_offset(
    tape: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"model": "slow-stream", "messages": [{"role": "user", "content": "one two three"}], "stream": True}

    def timed(url: str, clock: VirtualClock | None = None) -> list[tuple[float, bytes]]:
        response = requests.post(url + "/v1/chat/completions", json=body, stream=True)
        start = clock.seconds() if clock is not None else 0.0
        return [
            (clock.seconds() - start if clock is not None else 0.0, chunk)
            for chunk in response.iter_content(chunk_size=64)
        ]

    with fake_provider() as fp:
        with record(tape), agent_run("paced"):
            live = timed(fp.url)
        with virtual_clock(monkeypatch) as clock:
            with replay(tape, pace="recorded"):
                paced = timed(fp.url, clock)
            clock.sleeps.clear()
            with replay(tape):
                at_once = timed(fp.url, clock)
            assert clock.sleeps == []  # not paced: nothing waited for
    [step] = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    offsets = [event["offset"] for event in json.loads(step.attrs[A.MODEL_RESULT])["events"]]
    assert offsets[4] - offsets[0] > 0.15  # the fake provider spaces its first events 50 ms apart
    assert [chunk for _, chunk in paced] == [chunk for _, chunk in at_once]  # the same pieces, later
    assert b"".join(c for _, c in paced) == b"".join(c for _, c in live)
    # A piece of 64 bytes may span events: it comes when its last event is due. Each event is due at its
    # recorded offset after the body is first read, and the last piece comes when the last event does.
    due = offsets
    arrived = [when for when, _ in paced]
    assert arrived == sorted(arrived) and all(any(abs(a - d) < 1e-6 for d in due) for a in arrived)
    assert arrived[-1] == pytest.approx(due[-1], abs=1e-6) and len(set(arrived)) > 3
    assert {when for when, _ in at_once} == {0.0}  # without pacing they come at once


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_sealed_https_request_opens_no_connection_not_even_for_the_tls_handshake(tape: Path, client: str) -> None:
    with rest_server() as server:
        with record(tape), agent_run("rest"):
            found = _search(CLIENTS[client](), server, "item 2")
        before = (len(server.requests), server.received, server.connections)
        https = Counter(url=server.url.replace("http://", "https://"))  # the same host and port, over TLS
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # urllib3's InsecureRequestWarning included
            with replay(tape) as session:
                # a TLS handshake with this plain-HTTP server would fail, and its ClientHello would be counted
                assert _search(CLIENTS[client](), https, "item 2") == found
        assert (len(server.requests), server.received, server.connections) == before
    assert session.stats.hits == 1


def test_a_head_request_keeps_its_headers_while_recording_and_replays(tape: Path) -> None:
    with rest_server() as server:
        url = f"{server.url}/items?q=item"
        live_get = requests.get(url)
        with record(tape), agent_run("head"):
            live = requests.head(url)
        with replay(tape):
            again = requests.head(url)
        assert len(server.requests) == 2
    assert live.headers["content-length"] == live_get.headers["content-length"]  # the GET body's length, as sent
    assert (again.status_code, again.content, again.headers["etag"]) == (200, b"", live.headers["etag"])
