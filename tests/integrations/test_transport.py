"""The capture point itself, with plain httpx and httpx2 clients: patched only inside a block and
restored exactly after it, byte-faithful streams, routes (added, turned off), other requests untouched."""

from __future__ import annotations

import asyncio
import importlib.abc
import sys
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import orjson
import pytest
from helpers.clock import VirtualClock, virtual_clock
from helpers.model_server import fake_provider
from helpers.rawtape import raw_spans

from otel_agent_replay import HttpRoute, ReplayOptions, agent_run, record, replay
from otel_agent_replay.core import ConfigurationError, SideEffectRefused
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import _activation, activate, patched
from otel_agent_replay.integrations.clients._httpx import build_response

BODY = {"model": "gpt-test", "messages": [{"role": "user", "content": "count to three"}], "stream": True}
SLOW_BODY = {**BODY, "model": "slow-stream"}  # its events come 50 ms apart


def _originals() -> list[object]:
    return [m.HTTPTransport.__dict__["handle_request"] for m in (httpx, httpx2)] + [
        m.AsyncHTTPTransport.__dict__["handle_async_request"] for m in (httpx, httpx2)
    ]


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_stream_replays_byte_for_byte_chunk_by_chunk(tape: Path, module: ModuleType) -> None:
    def chunks(url: str) -> list[bytes]:
        with module.Client() as client, client.stream("POST", url + "/v1/chat/completions", json=BODY) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            return list(response.iter_raw())

    with fake_provider() as fp:
        with record(tape), agent_run("raw"):
            live = chunks(fp.url)
        with replay(tape) as session:
            replayed = chunks(fp.url)
        assert len(fp.requests) == 1
    assert len(live) > 1  # while recording, the live stream reached the caller chunk by chunk
    assert b"".join(replayed) == b"".join(live)
    assert len(replayed) == b"".join(live).count(b"\n\n")  # one chunk per event
    assert session.stats.hits == 1


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_async_clients_are_captured_too(tape: Path, module: ModuleType) -> None:
    async def ask(url: str) -> bytes:
        async with module.AsyncClient() as client:
            body = {**BODY, "stream": False}
            response = await client.post(url + "/v1/chat/completions", json=body)
            return bytes(response.content)

    with fake_provider() as fp:

        async def record_it() -> bytes:
            with record(tape), agent_run("async"):
                return await ask(fp.url)

        live = asyncio.run(record_it())

    async def replay_it() -> bytes:
        with replay(tape):
            return await ask(fp.url)

    assert asyncio.run(replay_it()) == live
    assert len(fp.requests) == 1


def test_nothing_is_patched_outside_a_block_and_the_originals_come_back(tape: Path) -> None:
    before = _originals()
    assert not patched()
    with fake_provider() as fp:
        with record(tape), agent_run("nest"):
            assert patched()
            inner = activate()
            assert _originals() != before
            inner.close()
            inner.close()  # closing twice is harmless
            assert patched()  # the record block still holds it
            httpx2.post(fp.url + "/v1/chat/completions", json={**BODY, "stream": False})
        assert not patched()
        assert _originals() == before
        httpx2.post(fp.url + "/v1/chat/completions", json={**BODY, "stream": False})  # not recorded
    assert len([s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]) == 1


def test_activation_is_reference_counted_across_threads() -> None:
    before = _originals()
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                barrier.wait() if _ == 0 else None
                activation = activate()
                assert patched()
                activation.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not patched() and _originals() == before


def test_http_false_leaves_the_transports_alone(tape: Path) -> None:
    before = _originals()
    with fake_provider() as fp:
        with record(tape, http=False), agent_run("off"):
            assert _originals() == before
            httpx2.post(fp.url + "/v1/chat/completions", json={**BODY, "stream": False})
        # the tape holds no step, which a strict replay refuses (an empty recording proves nothing)
        with replay(tape, mode="new_episodes", http=False, allow_unused=True):
            httpx2.post(fp.url + "/v1/chat/completions", json={**BODY, "stream": False})
        assert len(fp.requests) == 2  # both went to the provider
    assert [s.name for s in raw_spans(tape)] == ["invoke_agent off"]


def test_http_models_false_makes_a_model_request_a_plain_http_step(tape: Path) -> None:
    body = {**BODY, "stream": False}
    with fake_provider() as fp:
        with record(tape, http_models=False), agent_run("plain"):
            live = httpx2.post(fp.url + "/v1/chat/completions", json=body)
        name = f"POST {fp.url.removeprefix('http://')}/v1/chat/completions"
        with replay(tape, http_models=False, stub=[name]) as session:
            again = httpx2.post(fp.url + "/v1/chat/completions", json=body)
        assert len(fp.requests) == 1  # the replay sent nothing
    assert again.content == live.content and again.status_code == live.status_code
    steps = [s for s in raw_spans(tape) if s.attrs.get(A.RUN_ID) and s.name != "invoke_agent plain"]
    assert [(s.name, s.attrs[A.KIND], s.attrs[A.SIDE_EFFECT]) for s in steps] == [
        (f"execute_tool POST {fp.url.removeprefix('http://')}/v1/chat/completions", "http", "external")
    ]
    assert session.stats.stubbed_side_effects == 1


def test_http_routes_adds_a_route_and_other_requests_are_http_steps(tape: Path) -> None:
    route = HttpRoute("acme.generate", "/acme/generate", "acme")
    with fake_provider() as fp:
        with record(tape, http_routes=[route]), agent_run("acme"):
            custom = httpx.post(fp.url + "/acme/generate", json={"model": "m1", "prompt": "hi"})
            other = httpx.post(fp.url + "/not/a/model", json={"x": 1})
        with pytest.raises(SideEffectRefused, match=r"POST 127\.0\.0\.1"), replay(tape, http_routes=[route]) as session:
            again = httpx.post(fp.url + "/acme/generate", json={"model": "m1", "prompt": "hi"})
            httpx.post(fp.url + "/not/a/model", json={"x": 1})  # a POST is not read-only: refused, never sent
        assert len(fp.requests) == 2  # the replay sent nothing
    assert custom.status_code == again.status_code == 404  # the fake provider has no such route: 404 is recorded
    assert again.json() == custom.json()
    assert other.status_code == 404
    spans = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert [(s.name, s.attrs["agent_replay.function"]) for s in spans] == [("chat m1", "acme.generate")]
    assert session.stats.hits == 1


def test_a_bad_route_is_a_configuration_error(tape: Path) -> None:
    with pytest.raises(ConfigurationError, match="path starting with '/'"):
        HttpRoute("x", "no-slash", "acme")
    with pytest.raises(ConfigurationError, match="give HttpRoute values"):
        record(tape, http_routes=["/v1/x"])  # type: ignore[list-item]
    assert not tape.exists()
    with pytest.raises(ConfigurationError, match="give HttpRoute values"):
        ReplayOptions(http_routes=["/v1/x"])  # type: ignore[list-item]
    options = ReplayOptions(http_routes=[HttpRoute("acme.generate", "/acme/generate", "acme")])  # type: ignore[arg-type]
    assert options.http_routes == (HttpRoute("acme.generate", "/acme/generate", "acme"),)


def test_mode_once_records_a_missing_tape_then_replays_it(tape: Path) -> None:
    body = {**BODY, "stream": False}
    with fake_provider() as fp:
        with replay(tape, mode="once"), agent_run("once"):
            first = httpx2.post(fp.url + "/v1/chat/completions", json=body).json()
        assert len(fp.requests) == 1 and tape.exists()
        with replay(tape, mode="once") as session, agent_run("once"):
            second = httpx2.post(fp.url + "/v1/chat/completions", json=body).json()
        assert len(fp.requests) == 1
    assert second == first
    assert session.stats.hits == 1
    assert not patched()


def test_a_consumer_that_stops_early_ends_the_step_with_what_arrived(tape: Path) -> None:
    def first_chunk(url: str) -> bytes:
        with httpx2.Client() as client, client.stream("POST", url + "/v1/chat/completions", json=SLOW_BODY) as response:
            return next(response.iter_raw())

    with fake_provider() as fp:
        with record(tape), agent_run("early"):
            live = first_chunk(fp.url)
        with replay(tape):
            replayed = first_chunk(fp.url)
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    events = orjson.loads(span.attrs[A.MODEL_RESULT])["events"]
    assert 1 <= len(events) < 8  # what had arrived when the stream was closed, not the whole answer
    assert replayed == live == events[0]["text"].encode()


def test_an_event_stream_still_open_when_its_run_ends_reaches_the_tape(tape: Path) -> None:
    with fake_provider() as fp, httpx2.Client() as client:
        with record(tape):
            with warnings.catch_warnings(record=True), agent_run("open-stream"):
                request = client.build_request("POST", fp.url + "/v1/chat/completions", json=SLOW_BODY)
                response = client.send(request, stream=True)
                chunks = response.iter_raw()
                first = next(chunks)
            rest = b"".join(chunks)  # read after the run: not part of its step
            response.close()
        assert rest
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    events = orjson.loads(span.attrs[A.MODEL_RESULT])["events"]
    assert 1 <= len(events) < 8 and events[0]["text"].encode() == first


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_pace_recorded_hands_out_a_replayed_event_stream_at_its_recorded_offsets(
    module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [{"offset": 0.05 * i, "text": f"data: {i}\n\n"} for i in range(5)]
    result = {"status": 200, "headers": {"content-type": "text/event-stream"}, "events": events}
    request = module.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    due = [e["offset"] for e in events]

    with virtual_clock(monkeypatch) as clock:

        def timed(pace: bool) -> tuple[list[float], list[bytes]]:
            start = clock.seconds()
            got = [(clock.seconds() - start, c) for c in build_response(module, result, request, pace=pace).iter_raw()]
            return [when for when, _ in got], [c for _, c in got]

        at_once, fast = timed(False)
        assert clock.sleeps == []  # not paced: nothing waited for
        paced, slow = timed(True)

        async def timed_async() -> list[float]:
            start = clock.seconds()
            paced_stream = build_response(module, result, request, pace=True)
            return [clock.seconds() - start async for _ in paced_stream.aiter_raw()]

        paced_async = asyncio.run(timed_async())
    assert fast == slow == [e["text"].encode() for e in events]
    assert at_once == [0.0] * 5
    assert paced == pytest.approx(due, abs=1e-6) and paced_async == pytest.approx(due, abs=1e-6)


def test_a_recorded_stream_replays_paced_end_to_end(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def chunks(url: str, clock: VirtualClock | None = None) -> list[tuple[float, bytes]]:
        with httpx2.Client() as client, client.stream("POST", url + "/v1/chat/completions", json=BODY) as response:
            start = clock.seconds() if clock is not None else 0.0
            return [(clock.seconds() - start if clock is not None else 0.0, c) for c in response.iter_raw()]

    with fake_provider() as fp:
        with record(tape), agent_run("paced"):
            live = chunks(fp.url)
        with virtual_clock(monkeypatch) as clock, replay(tape, pace="recorded"):
            replayed = chunks(fp.url, clock)
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    offsets = [e["offset"] for e in orjson.loads(span.attrs[A.MODEL_RESULT])["events"]]
    assert offsets[-1] > 0.005  # the provider spaced its first events 2 ms apart
    assert [when for when, _ in replayed] == pytest.approx(offsets, abs=1e-6)  # each event when it was due
    assert b"".join(c for _, c in replayed) == b"".join(c for _, c in live)


def test_a_block_imports_and_looks_for_no_client_library() -> None:
    """Every replay activates the capture points: it patches what is imported and watches for the rest, so a
    library the agent does not use is neither imported nor searched for (each search walks every path entry)."""
    searched: list[str] = []

    class Counting(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            searched.append(name)
            return None

    finder = Counting()
    sys.meta_path.insert(0, finder)
    try:
        activation = _activation.activate()
        activation.close()
    finally:
        sys.meta_path.remove(finder)
    assert searched == []
