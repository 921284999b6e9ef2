"""requests answered at ``HTTPAdapter.send`` in a replay: the response is the one the adapter builds from a
live answer (its type, status, reason, headers, URL, raw, streamed pieces), no connection pool is made, and
what urllib3 would do differently (retries on statuses, a live call the replay makes) goes deeper."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
import urllib3
from helpers.counted_rest_server import rest_server
from urllib3.util.retry import Retry

from otel_agent_replay import agent_run, record, replay


def _pools(session: requests.Session, url: str) -> int:
    return len(session.get_adapter(url).poolmanager.pools)


def test_a_replayed_get_is_the_response_the_adapter_builds_live_and_makes_no_pool(tape: Path) -> None:
    with rest_server() as server:
        url = f"{server.url}/items?q=item 2"
        with record(tape), agent_run("rest"):
            live = requests.Session().get(url)
        before = len(server.requests)
        session = requests.Session()
        with replay(tape) as replayed:
            again = session.get(url)
        assert len(server.requests) == before
    assert _pools(session, url) == 0  # answered above urllib3: no pool, no connection
    assert replayed.stats.hits == 1
    assert type(again) is type(live) and type(again.raw) is type(live.raw) is urllib3.HTTPResponse
    assert (again.status_code, again.reason, again.url, again.encoding) == (
        live.status_code,
        live.reason,
        live.url,
        live.encoding,
    )
    assert again.content == live.content and again.json() == live.json()
    assert list(again.iter_content(16)) == list(live.iter_content(16)) and len(list(again.iter_lines())) == 1
    assert again.headers["content-type"] == live.headers["content-type"]
    assert again.headers["etag"] == live.headers["etag"]
    assert again.headers["content-length"] == str(len(live.content))
    assert again.raw.read() == live.raw.read() == b""  # drained, as Session.send leaves a body it read
    assert again.request.url == live.request.url and again.connection is session.get_adapter(url)
    assert again.cookies.get_dict() == {} and again.history == [] and again.ok


def test_a_streamed_replay_hands_out_the_same_pieces_as_live(tape: Path) -> None:
    with rest_server() as server:
        url = f"{server.url}/items?q=item"
        with record(tape), agent_run("rest"):
            live = list(requests.get(url, stream=True).iter_content(chunk_size=7))
        session = requests.Session()
        with replay(tape):
            response = session.get(url, stream=True)
            assert response.raw.tell() == 0  # not read yet, as a live stream
            again = list(response.iter_content(chunk_size=7))
    assert again == live and len(again) > 3


def test_an_error_status_raises_requests_own_error_on_replay(tape: Path) -> None:
    with rest_server() as server:
        url = f"{server.url}/nowhere"
        with record(tape), agent_run("errors"):
            live = requests.get(url)
        with replay(tape):
            again = requests.get(url)
            with pytest.raises(requests.HTTPError, match="404 Client Error: Not Found"):
                again.raise_for_status()
    assert (again.status_code, again.reason, again.json()) == (live.status_code, live.reason, live.json())


def test_retries_on_statuses_go_deeper_and_replay_every_attempt(tape: Path) -> None:
    def retrying() -> requests.Session:
        session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(max_retries=Retry(total=2, status_forcelist=[404], backoff_factor=0))
        session.mount("http://", adapter)
        return session

    with rest_server() as server:
        url = f"{server.url}/nowhere"
        with record(tape), agent_run("retries"), pytest.raises(requests.exceptions.RetryError):
            retrying().get(url)
        attempts = len(server.requests)
        with replay(tape) as session, pytest.raises(requests.exceptions.RetryError):
            retrying().get(url)
        assert len(server.requests) == attempts == 3
    assert session.stats.hits == 3  # each attempt urllib3 makes is its own recorded step


def test_a_miss_that_goes_live_is_sent_once_and_appended(tape: Path) -> None:
    with rest_server() as server:
        with record(tape), agent_run("rest"):
            requests.get(f"{server.url}/items?q=item 1")
        before = len(server.requests)
        with replay(tape, mode="new_episodes") as session:
            requests.get(f"{server.url}/items?q=item 1")
            fresh = requests.get(f"{server.url}/items/7")  # no such step on the tape: a read-only miss
        assert len(server.requests) == before + 1  # live once: not answered again from the tape
        with replay(tape) as again:
            requests.get(f"{server.url}/items?q=item 1")
            kept = requests.get(f"{server.url}/items/7")
        assert len(server.requests) == before + 1
    assert (fresh.status_code, fresh.json()) == (kept.status_code, kept.json()) == (404, {"error": "not found"})
    assert session.stats.live_tool_calls == 1 and again.stats.hits == 2


def test_an_adapter_that_builds_its_own_response_still_builds_it_on_replay(tape: Path) -> None:
    class Marking(requests.adapters.HTTPAdapter):
        def build_response(self, req: requests.PreparedRequest, resp: object) -> requests.Response:
            response = super().build_response(req, resp)
            response.headers["x-built-by"] = "marking"
            return response

    def session() -> requests.Session:
        made = requests.Session()
        made.mount("http://", Marking())
        return made

    with rest_server() as server:
        url = f"{server.url}/items?q=item 2"
        with record(tape), agent_run("rest"):
            live = session().get(url)
        before = len(server.requests)
        with replay(tape) as replayed:
            again = session().get(url)
        assert len(server.requests) == before
    assert again.headers["x-built-by"] == live.headers["x-built-by"] == "marking"
    assert again.json() == live.json() and replayed.stats.hits == 1


def test_replayed_responses_of_one_recorded_head_share_no_state(tape: Path) -> None:
    # the head of a recorded answer (urllib3's response, requests' headers) is built once and copied into
    # each response: what one response's reader or owner changes never reaches the next
    with rest_server() as server:
        url = f"{server.url}/items?q=item 2"
        with record(tape), agent_run("rest"):
            live = [requests.get(url, stream=n > 0) for n in range(3)]
            expected = [r.content for r in live]
        session = requests.Session()
        with replay(tape) as replayed:
            first = session.get(url)
            first.headers["x-mine"] = "changed"
            first.raw.headers["x-mine"] = "changed"
            first.raw.close()
            second = session.get(url, stream=True)
            part = second.raw.read(5)
            third = session.get(url, stream=True)
    assert replayed.stats.hits == 3
    assert "x-mine" not in second.headers and "x-mine" not in third.raw.headers
    assert not second.raw.closed and third.raw.tell() == 0 and second.raw.tell() == 5
    assert part + second.raw.read() == expected[1] and third.raw.read() == expected[2]
    assert dict(third.headers) == dict(second.headers) and third.raw.status == second.raw.status == live[2].raw.status
    assert third.raw.length_remaining == 0 and third.raw.url == live[2].raw.url
