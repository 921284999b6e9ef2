"""Streams: a generator or async-generator tool or model function is one step, replayed chunk by chunk."""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.clock import VirtualClock, virtual_clock
from helpers.rawtape import steps_of

from otel_agent_replay import agent_run, load_tape, model_call, record, replay, tool
from otel_agent_replay.core import RecordingWarning
from otel_agent_replay.core import attributes as A


class StreamError(Exception):
    def __init__(self, at: int) -> None:
        super().__init__(f"stream broke after chunk {at}")
        self.at = at


RAN: list[str] = []


@tool(side_effect="read_only")
def numbers(n: int, fail_after: int = 0) -> Iterator[dict[str, Any]]:
    RAN.append("numbers")
    for i in range(1, n + 1):
        yield {"i": i, "day": dt.date(2025, 1, 1) + dt.timedelta(days=i)}
        if i == fail_after:
            raise StreamError(i)


@model_call(provider="test")
async def tokens(model: str, n: int, fail_after: int = 0) -> AsyncIterator[str]:
    RAN.append("tokens")
    for i in range(1, n + 1):
        await asyncio.sleep(0)
        yield f"tok{i}"
        if i == fail_after:
            raise StreamError(i)


def _sync_agent(n: int, fail_after: int = 0) -> list[Any]:
    got: list[Any] = []
    try:
        for chunk in numbers(n, fail_after):
            got.append(chunk)
    except StreamError as e:
        got.append(("error", e.at))
    return got


async def _async_agent(n: int, fail_after: int = 0) -> list[Any]:
    got: list[Any] = []
    try:
        async for chunk in tokens("m", n, fail_after):
            got.append(chunk)
    except StreamError as e:
        got.append(("error", e.at))
    return got


def test_decorated_generators_stay_generator_functions() -> None:
    assert inspect.isgeneratorfunction(numbers)
    assert inspect.isasyncgenfunction(tokens)


@pytest.mark.parametrize("fail_after", [0, 10])
def test_a_sync_generator_of_50_chunks_replays_chunk_for_chunk(tape: Path, fail_after: int) -> None:
    RAN.clear()
    with record(tape), agent_run("a"):
        live = _sync_agent(50, fail_after)
    with replay(tape), agent_run("a"):
        offline = _sync_agent(50, fail_after)
    assert RAN == ["numbers"]  # the generator ran once, when recorded
    assert offline == live
    assert len(live) == (11 if fail_after else 50)
    assert type(offline[0]["day"]) is dt.date
    (step,) = steps_of(tape)
    chunks = orjson.loads(step.attrs[A.GEN_AI_TOOL_CALL_RESULT])
    offsets = orjson.loads(step.attrs[A.STREAM_OFFSETS])
    assert len(chunks) == len(offsets) == (10 if fail_after else 50)
    assert offsets == sorted(offsets) and offsets[0] >= 0


@pytest.mark.parametrize("fail_after", [0, 10])
def test_an_async_generator_of_50_chunks_replays_chunk_for_chunk(tape: Path, fail_after: int) -> None:
    RAN.clear()

    async def recorded() -> list[Any]:
        with record(tape), agent_run("a"):
            return await _async_agent(50, fail_after)

    async def replayed() -> list[Any]:
        with replay(tape), agent_run("a"):
            return await _async_agent(50, fail_after)

    live = asyncio.run(recorded())
    offline = asyncio.run(replayed())
    assert RAN == ["tokens"]
    assert offline == live and live[:2] == ["tok1", "tok2"]
    assert len(live) == (11 if fail_after else 50)
    (step,) = load_tape(tape).runs[0].steps
    assert step.kind == "llm" and len(step.result) == (10 if fail_after else 50)
    assert (step.error is not None) == bool(fail_after)


def test_a_consumer_that_stops_after_3_chunks_works_on_record_and_replay(tape: Path) -> None:
    def agent() -> list[Any]:
        got = []
        for chunk in numbers(50):
            got.append(chunk["i"])
            if len(got) == 3:
                break
        return got

    async def async_agent() -> list[str]:
        got = []
        stream = tokens("m", 50)
        async for chunk in stream:
            got.append(chunk)
            if len(got) == 3:
                break
        await stream.aclose()  # type: ignore[attr-defined]
        return got

    with record(tape), agent_run("a"):
        live = (agent(), asyncio.run(async_agent()))
    with replay(tape), agent_run("a"):
        offline = (agent(), asyncio.run(async_agent()))
    assert live == offline == ([1, 2, 3], ["tok1", "tok2", "tok3"])
    steps = load_tape(tape).runs[0].steps
    assert [len(s.result) for s in steps] == [3, 3]  # each step ended as recorded so far
    assert all(s.error is None for s in steps)


def test_pace_recorded_hands_out_chunks_at_their_recorded_offsets(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    @tool(side_effect="read_only")
    def slow(n: int) -> Iterator[int]:
        for i in range(n):
            time.sleep(0.05)
            yield i

    def timed(clock: VirtualClock) -> list[float]:
        start = clock.seconds()
        return [clock.seconds() - start for _ in slow(4)]

    with virtual_clock(monkeypatch) as clock:
        with record(tape), agent_run("a"):
            assert timed(clock) == pytest.approx([0.05, 0.10, 0.15, 0.20])
        clock.sleeps.clear()
        with replay(tape), agent_run("a"):
            assert timed(clock) == [0, 0, 0, 0]  # at once: nothing waited for
        assert clock.sleeps == []
        with replay(tape, pace="recorded"), agent_run("a"):
            assert timed(clock) == pytest.approx([0.05, 0.10, 0.15, 0.20], abs=1e-6)  # each when it was due


def test_a_tool_called_between_chunks_is_not_nested_under_the_stream(tape: Path) -> None:
    @tool(side_effect="read_only")
    def look(i: int) -> int:
        return i * 10

    with record(tape), agent_run("a"):
        for chunk in numbers(2):
            look(chunk["i"])
    steps = load_tape(tape).runs[0].steps
    assert [s.step_id for s in steps] == ["numbers#1", "look#1", "look#2"]
    stream = steps[0]
    assert all(s.parent_span_id != stream.span_id for s in steps[1:])


def test_a_double_of_a_generator_tool_streams_too(tape: Path) -> None:
    RAN.clear()
    with record(tape), agent_run("a"):
        live = list(numbers(3))
    with replay(tape) as session, agent_run("a"):
        double = session.double(numbers)
        assert inspect.isgeneratorfunction(double)
        assert list(double(3)) == live
    assert RAN == ["numbers"]


def test_a_stream_still_open_when_its_run_ends_reaches_the_tape_as_recorded_so_far(tape: Path) -> None:
    def agent() -> tuple[list[Any], Iterator[dict[str, Any]]]:
        stream = numbers(5)
        return [next(stream), next(stream)], stream  # two chunks read, the stream kept open past the run

    RAN.clear()
    with record(tape):
        warned = pytest.warns(RecordingWarning, match=r"stream of 'numbers' was still open when its run ended")
        with warned, agent_run("leaky"):
            live, kept = agent()
        assert next(kept)["i"] == 3  # the consumer may go on after the run: the step is not touched again
    (step,) = load_tape(tape).runs[0].steps
    assert [c["i"] for c in orjson.loads(step.result_json)] == [1, 2]
    assert step.end_ns <= load_tape(tape).runs[0].end_ns
    with replay(tape) as session, agent_run("leaky"):
        replayed, _ = agent()
    assert replayed == live and session.stats["live_tool_calls"] == 0 and session.stats["drift_events"] == 0


def test_an_async_stream_still_open_when_its_run_ends_reaches_the_tape(tape: Path) -> None:
    async def agent() -> list[str]:
        with agent_run("leaky-async"):
            stream = tokens("m", 4)
            first = [await stream.__anext__()]
        # the run has ended, the stream is still open: asyncio.run closes it only after this returns
        assert await stream.__anext__() == "tok2"
        return first

    with record(tape), warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordingWarning)  # warned once per name, maybe already
        live = asyncio.run(agent())
    (step,) = load_tape(tape).runs[0].steps
    assert orjson.loads(step.result_json) == ["tok1"] == live
