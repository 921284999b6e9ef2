"""aiohttp's capture point with real servers on 127.0.0.1: litellm ``acompletion`` (aiohttp underneath),
a REST tool written with aiohttp, streams chunk by chunk, pacing. Each is recorded with its server up
and replayed strictly with the server STILL UP: no request reaches it."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch its price list at import

import aiohttp
import litellm
import openai
import orjson
import pytest
from helpers.clock import VirtualClock, virtual_clock
from helpers.model_server import fake_provider
from helpers.rawtape import raw_spans
from helpers.rest_server import rest_api
from helpers.stream_server import EVENTS, GZIPPED, LINES, stream_server
from litellm.types.utils import ModelResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from otel_agent_replay import agent_run, load_tape, record, replay
from otel_agent_replay.core import SideEffectRefused
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import activate, patched

API_KEY = "sk-litellm-Secret0123456789abcdef"
T = TypeVar("T")


def _run(make: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(make())  # type: ignore[arg-type]


def _original() -> object:
    return aiohttp.ClientSession.__dict__["_request"]


def _steps(tape: Path) -> list[Any]:
    return [step for run in load_tape(tape).runs for step in run.steps]


def test_patched_only_inside_a_block_and_the_original_comes_back(tape: Path) -> None:
    before = _original()

    async def items(url: str) -> Any:
        async with aiohttp.ClientSession() as session, session.get(url + "/items") as response:
            return await response.json()

    with rest_api() as api:
        assert not patched()
        with record(tape), agent_run("patch"):
            assert _original() is not before
            inner = activate()
            inner.close()
            assert _original() is not before  # the record block still holds it
            live = _run(lambda: items(api.url))
        assert _original() is before and not patched()
        again = _run(lambda: items(api.url))  # after the block: sent, not recorded
        with record(tape.with_name("off.jsonl"), http=False), agent_run("off"):
            assert _original() is before
        assert len(api.requests) == 2
    assert again == live
    assert [s.tool for s in _steps(tape)] == [f"GET {api.authority}/items"]


def _completion_kwargs(url: str, text: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": text}]
    return {"model": "openai/gpt-test", "api_base": url, "api_key": API_KEY, "messages": messages}


async def _ask_litellm(url: str) -> tuple[Any, list[Any]]:
    whole = await litellm.acompletion(**_completion_kwargs(url, "count to three"))
    stream = await litellm.acompletion(**_completion_kwargs(url, "and back"), stream=True)
    pieces = [chunk async for chunk in stream]  # type: ignore[union-attr]
    return whole, pieces


def test_litellm_acompletion_over_aiohttp_replays_the_same_objects_with_the_provider_still_up(tape: Path) -> None:
    seen: list[str] = []
    original = aiohttp.ClientSession._request

    async def spy(self: aiohttp.ClientSession, method: str, url: Any, **kwargs: Any) -> Any:
        seen.append(str(url))
        return await original(self, method, url, **kwargs)

    with fake_provider() as fp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(aiohttp.ClientSession, "_request", spy)  # under ours: shows litellm really sends through aiohttp
        with record(tape), agent_run("litellm"):
            live, live_pieces = _run(lambda: _ask_litellm(fp.openai_url))
        assert len(fp.requests) == 2 and len(seen) == 2
        with replay(tape) as session:
            again, pieces = _run(lambda: _ask_litellm(fp.openai_url))
        assert len(fp.requests) == 2  # the provider is up, and nothing reached it
    assert len(seen) == 4  # the replay's requests went into aiohttp too, and were answered inside it
    assert isinstance(again, ModelResponse) and type(again) is type(live)
    assert again.choices[0].message.content == live.choices[0].message.content == "You said: count to three"
    assert (again.id, again.model, again.usage.total_tokens) == (live.id, live.model, live.usage.total_tokens)
    assert [type(p) for p in pieces] == [type(p) for p in live_pieces]
    text = "".join(p.choices[0].delta.content or "" for p in pieces)
    assert text == "".join(p.choices[0].delta.content or "" for p in live_pieces) == "You said: and back"
    assert session.stats.hits == 2 and session.stats.live_model_calls == 0 and session.stats.misses == 0
    spans = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    assert [(s.name, s.attrs[A.FUNCTION]) for s in spans] == [("chat gpt-test", "openai.chat.completions")] * 2
    assert API_KEY.encode() not in tape.read_bytes()


async def _ask_openai(url: str) -> tuple[ChatCompletion, list[ChatCompletionChunk]]:
    async with openai.AsyncOpenAI(
        base_url=url, api_key=API_KEY, max_retries=0, http_client=openai.DefaultAioHttpClient()
    ) as client:
        messages: Any = [{"role": "user", "content": "spell it"}]
        whole = await client.chat.completions.create(model="gpt-test", messages=messages)
        stream = await client.chat.completions.create(model="gpt-test", messages=messages, stream=True)
        return whole, [chunk async for chunk in stream]


def test_the_openai_sdk_on_its_aiohttp_client_replays_the_same_typed_objects(tape: Path) -> None:
    with fake_provider() as fp:
        with record(tape), agent_run("openai-aiohttp"):
            live, live_chunks = _run(lambda: _ask_openai(fp.openai_url))
        with replay(tape) as session:
            again, chunks = _run(lambda: _ask_openai(fp.openai_url))
        assert len(fp.requests) == 2
    assert isinstance(again, ChatCompletion) and again == live
    assert all(isinstance(c, ChatCompletionChunk) for c in chunks) and chunks == live_chunks and len(chunks) > 3
    assert session.stats.hits == 2 and session.stats.live_model_calls == 0


async def _catalogue(url: str) -> tuple[int, Any, str]:
    async with aiohttp.ClientSession() as session, session.get(url + "/items", params={"q": "lamp"}) as response:
        return response.status, await response.json(), response.headers["content-type"]


async def _order(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.post(url + "/orders", json={"sku": "lamp"}) as response:
        return response.status, await response.json()


def test_a_rest_tool_get_is_served_and_a_post_refused_unless_stubbed_none_reaching_the_server(tape: Path) -> None:
    with rest_api() as api:
        with record(tape), agent_run("shop"):
            listed = _run(lambda: _catalogue(api.url))
            ordered = _run(lambda: _order(api.url))
        assert len(api.requests) == 2
        with pytest.raises(SideEffectRefused, match=f"POST {api.authority}/orders"), replay(tape) as refused:
            assert _run(lambda: _catalogue(api.url)) == listed
            _run(lambda: _order(api.url))
        with replay(tape, stub=[f"POST {api.authority}/orders"]) as stubbed:
            assert _run(lambda: _catalogue(api.url)) == listed
            assert _run(lambda: _order(api.url)) == ordered
        assert len(api.requests) == 2  # neither replay reached the server, still up
    assert listed[0] == 200 and listed[1]["query"] == {"q": "lamp"} and ordered == (201, {"id": "o-77", "sku": "lamp"})
    assert refused.stats.hits == 1 and refused.stats.refused_side_effects == 1
    assert stubbed.stats.hits == 2 and stubbed.stats.stubbed_side_effects == 1 and stubbed.stats.real_side_effects == 0
    get, post = _steps(tape)
    assert (get.tool, get.side_effect) == (f"GET {api.authority}/items", "read_only")
    assert get.args == {"query": {"q": "lamp"}}
    assert (post.tool, post.side_effect) == (f"POST {api.authority}/orders", "external")
    assert post.args == {"body": {"sku": "lamp"}}
    assert b"s3cr3t-cookie-value" not in tape.read_bytes()  # the server's Set-Cookie is not kept


BODIES: list[dict[str, Any]] = [
    {"json": {"sku": "lamp", "qty": 2}},
    {"data": b"\x89PNG\r\n\x00\xff"},
    {"data": "plain words"},
    {"data": {"name": "desk", "colour": "oak"}},
]


async def _post_bodies(url: str) -> list[tuple[int, bytes]]:
    out = []
    async with aiohttp.ClientSession() as session:
        for body in BODIES:
            async with session.post(url + "/notes", **body) as response:
                out.append((response.status, await response.read()))
    return out


def test_request_bodies_are_the_steps_arguments_and_replay_only_when_they_match(tape: Path) -> None:
    name = "POST {}/notes".format
    with rest_api() as api:
        with record(tape), agent_run("bodies"):
            live = _run(lambda: _post_bodies(api.url))
        sent = [body for _, _, _, body in api.requests]
        with replay(tape, stub=[name(api.authority)]) as session:
            again = _run(lambda: _post_bodies(api.url))
        assert len(api.requests) == 4
    assert again == live and [status for status, _ in live] == [404] * 4  # a recorded error status, served back
    assert session.stats.stubbed_side_effects == 4 and session.stats.drifts == 0
    assert [step.args["body"] for step in _steps(tape)] == [
        {"sku": "lamp", "qty": 2},
        {"sha256": __import__("hashlib").sha256(sent[1]).hexdigest(), "bytes": len(sent[1])},
        "plain words",
        {"form": {"name": "desk", "colour": "oak"}},
    ]
    assert sent[3] == b"name=desk&colour=oak"


def _connection_counter() -> tuple[aiohttp.TraceConfig, list[str]]:
    """aiohttp's own tracing: one entry each time the session starts opening a connection."""
    opened: list[str] = []

    async def on_start(session: Any, context: Any, params: Any) -> None:
        opened.append("connection")

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_start.append(on_start)
    return trace, opened


async def _read_streams(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    trace, out["connections"] = _connection_counter()
    async with aiohttp.ClientSession(trace_configs=[trace]) as session:
        async with session.get(url + "/events?gap=0.03") as response:
            out["sse"] = [chunk async for chunk in response.content.iter_any()]
            out["sse_head"] = (response.status, response.headers["content-type"], response.ok)
        async with session.get(url + "/lines") as response:
            out["ndjson"] = [chunk async for chunk in response.content.iter_any()]
        async with session.get(url + "/lines") as response:
            out["lines"] = [line async for line in response.content]  # readline
        async with session.get(url + "/events") as response:
            out["sized"] = [chunk async for chunk in response.content.iter_chunked(7)]
        async with session.get(url + "/lines") as response:
            await response.content.wait_eof()  # everything arrived (live) or was handed over (replayed)
            out["text"] = await response.text()
    return out


def test_streams_replay_byte_for_byte_one_recorded_chunk_at_a_time(tape: Path) -> None:
    with stream_server() as server:
        with record(tape), agent_run("streams"):
            live = _run(lambda: _read_streams(server.url))
        with replay(tape) as session:
            again = _run(lambda: _read_streams(server.url))
        assert len(server.requests) == 5
    events, lines = [e.encode() for e in EVENTS], [line.encode() for line in LINES]
    assert b"".join(live["sse"]) == b"".join(events) and len(live["sse"]) > 1  # chunk by chunk while recording
    assert again["sse"] == events  # replayed: one recorded event a chunk
    assert again["ndjson"] == lines and b"".join(live["ndjson"]) == b"".join(lines)
    assert again["lines"] == live["lines"] == lines
    assert b"".join(again["sized"]) == b"".join(live["sized"]) == b"".join(events)
    assert max(len(c) for c in again["sized"]) == 7 and len(again["sized"]) > len(events)
    assert again["text"] == live["text"] == "".join(LINES)
    assert again["sse_head"] == live["sse_head"] == (200, "text/event-stream; charset=utf-8", True)
    assert session.stats.hits == 5
    assert len(live["connections"]) == 5 and again["connections"] == []  # the replay opened no connection
    spans = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "http"]
    results = [orjson.loads(s.attrs[A.GEN_AI_TOOL_CALL_RESULT]) for s in spans]
    assert [r.get("framing", "sse") for r in results] == ["sse", "ndjson", "ndjson", "sse", "ndjson"]
    assert [e["text"] for e in results[0]["events"]] == EVENTS


async def _statuses(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession() as session:
        async with session.get(url + "/missing") as response:
            out["missing"] = (response.status, response.reason, response.ok, await response.json())
            try:
                response.raise_for_status()
            except aiohttp.ClientResponseError as exc:
                out["raised"] = (type(exc), exc.status, exc.message, str(exc.request_info.url))
        try:
            await session.get(url + "/missing", raise_for_status=True)
        except aiohttp.ClientResponseError as exc:
            out["raised_by_session"] = exc.status
        async with session.get(url + "/gzip") as response:
            out["gzip"] = (await response.json(), "content-encoding" in response.headers)
        async with session.get(url + "/gzip", auto_decompress=False) as response:
            out["gzip_raw"] = await response.read()
        async with session.get(url + "/moved") as response:
            out["moved"] = (response.status, [h.status for h in response.history], await response.json())
    return out


def test_error_statuses_encodings_and_redirects_behave_as_live(tape: Path) -> None:
    with stream_server() as server:
        with record(tape), agent_run("statuses"):
            live = _run(lambda: _statuses(server.url))
        with replay(tape) as session:
            again = _run(lambda: _statuses(server.url))
        assert len(server.requests) == 6  # /missing twice, /gzip twice, /moved and the /gzip it led to
    assert again == live
    assert live["missing"][:3] == (404, "Not Found", False)
    assert live["raised"][:3] == (aiohttp.ClientResponseError, 404, "Not Found")
    assert live["raised_by_session"] == 404
    # the body is handed over decoded and the header that no longer describes it is dropped, live and replayed
    assert live["gzip"] == (GZIPPED, False)
    assert json.loads(live["gzip_raw"]) == GZIPPED and live["gzip_raw"] != gzip.compress(json.dumps(GZIPPED).encode())
    assert live["moved"] == (200, [302], GZIPPED)
    assert session.stats.hits == 6
    assert [s.tool.split("/", 1)[1] for s in _steps(tape)] == ["missing", "missing", "gzip", "gzip", "moved", "gzip"]


def test_the_users_own_middlewares_still_run_around_the_capture(tape: Path) -> None:
    calls: list[str] = []

    async def sign(request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        request.headers["Authorization"] = "Bearer sk-signed-Secret0123456789"
        calls.append(str(request.url.path))
        return await handler(request)

    async def items(url: str) -> Any:
        async with aiohttp.ClientSession(middlewares=(sign,)) as session, session.get(url + "/items") as response:
            return await response.json()

    with rest_api() as api:
        with record(tape), agent_run("signed"):
            live = _run(lambda: items(api.url))
        assert api.requests[0][2]["Authorization"].startswith("Bearer ")
        with replay(tape):
            again = _run(lambda: items(api.url))
        assert len(api.requests) == 1
    assert again == live and calls == ["/items", "/items"]
    assert b"sk-signed" not in tape.read_bytes()


def test_a_consumer_that_stops_early_ends_the_step_with_what_arrived(tape: Path) -> None:
    async def first(url: str) -> bytes:
        async with aiohttp.ClientSession() as session, session.get(url + "/events?gap=0.05") as response:
            return await response.content.readuntil(b"\n\n")

    with stream_server() as server:
        with record(tape), agent_run("early"):
            live = _run(lambda: first(server.url))
        with replay(tape):
            again = _run(lambda: first(server.url))
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "http"]
    events = orjson.loads(span.attrs[A.GEN_AI_TOOL_CALL_RESULT])["events"]
    assert 1 <= len(events) < len(EVENTS)  # what had arrived when the response was released
    assert again == live == EVENTS[0].encode() == events[0]["text"].encode()


def test_pace_recorded_hands_out_a_replayed_stream_at_its_recorded_offsets(
    tape: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def timed(url: str, clock: VirtualClock | None = None) -> list[tuple[float, bytes]]:
        async with aiohttp.ClientSession() as session, session.get(url + "/events?gap=0.04") as response:
            start = clock.seconds() if clock is not None else 0.0
            return [
                (clock.seconds() - start if clock is not None else 0.0, chunk)
                async for chunk in response.content.iter_any()
            ]

    with stream_server() as server:
        with record(tape), agent_run("paced"):
            live = [c for _, c in _run(lambda: timed(server.url))]
        with virtual_clock(monkeypatch) as clock:
            with replay(tape, pace="recorded"):
                paced = _run(lambda: timed(server.url, clock))
            clock.sleeps.clear()
            with replay(tape):
                at_once = _run(lambda: timed(server.url, clock))
            assert clock.sleeps == []  # not paced: nothing waited for
        assert len(server.requests) == 1
    (span,) = [s for s in raw_spans(tape) if s.attrs.get(A.KIND) == "http"]
    offsets = [e["offset"] for e in orjson.loads(span.attrs[A.GEN_AI_TOOL_CALL_RESULT])["events"]]
    assert offsets[-1] - offsets[0] >= 0.15  # six events 40 ms apart
    slow, fast = [c for _, c in paced], [c for _, c in at_once]
    assert slow == fast == [e.encode() for e in EVENTS] and b"".join(live) == b"".join(slow)
    assert [when for when, _ in paced] == pytest.approx(offsets, abs=1e-6)  # each event when it was due
    assert [when for when, _ in at_once] == [0.0] * len(EVENTS)
