"""Streamed steps: a generator or async-generator tool or model function is one step, chunk by chunk.

The step starts when the consumer asks for the first chunk and ends when the stream ends, raises,
or the consumer stops early (``close()``, ``break``, garbage collection): then it ends as recorded
so far; a stream still open when its run ends is ended then, as recorded so far. Its result is the
array of chunks; ``agent_replay.stream.offsets_ns`` holds each chunk's offset from the step's
start. The step's span and ids are current only while the stream's own code runs (between the
consumer's requests), never while the consumer runs, so a tool the consumer calls between two
chunks is not nested under the stream.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import orjson
from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_agent_replay.capture import capture_result
from otel_agent_replay.core import attributes as A

from ._runtime import current_run, current_step
from ._spec import ToolSpec
from ._steps import StepInFlight, begin_step


class Chunks:
    """The chunks of one streamed step so far, with their offsets, and how the step ends."""

    __slots__ = ("items", "offsets", "start", "step", "token")

    def __init__(self, step: StepInFlight | None) -> None:
        self.step = step
        self.items: list[Any] = []
        self.offsets: list[int] = []
        self.start = time.monotonic_ns()
        self.token = 0
        if step is not None:
            detach(step)
            # a stream its consumer never closes is ended by its run's end, so its step still reaches the tape
            self.token = step.run.stream_opened(step.spec.name, self._left_open)

    def _left_open(self) -> None:
        self.end(None)

    def add(self, chunk: Any) -> None:
        self.items.append(chunk)
        self.offsets.append(time.monotonic_ns() - self.start)

    def enter(self) -> Callable[[], None]:
        """Make the step current while the stream's code runs; returns how to undo it."""
        step = self.step
        if step is None:
            return _nothing
        token = otel_context.attach(trace.set_span_in_context(step.span))
        step_token = current_step.set(step.ids.step_id)
        run_token = current_run.set(step.run) if current_run.get() is not step.run else None

        def undo() -> None:
            if run_token is not None:
                current_run.reset(run_token)
            current_step.reset(step_token)
            otel_context.detach(token)

        return undo

    def end(self, error: BaseException | None) -> None:
        """End the step with the chunks so far (and the error, when the stream raised)."""
        step = self.step
        if step is None or not step.run.stream_closed(self.token):
            return  # ended already (by the stream itself, or by its run's end)
        self.step = None
        step.span.set_attribute(A.STREAM_OFFSETS, orjson.dumps(self.offsets).decode("utf-8"))
        if error is None:
            step.finish(self.items)
            return
        try:
            captured = capture_result(self.items, step.capture)
            attrs: dict[str, Any] = {A.MODEL_RESULT if step.spec.is_llm else A.GEN_AI_TOOL_CALL_RESULT: captured.json}
            if captured.type_json is not None:
                attrs[A.RESULT_TYPE] = captured.type_json
            step.span.set_attributes(attrs)
        finally:
            step.fail(error)


def due_in(start_ns: int, offset_ns: int) -> float:
    """Seconds until a chunk recorded ``offset_ns`` after its stream began is due again, for a replayed
    stream that began at ``start_ns`` (``time.monotonic_ns``); zero or less when it is due."""
    return (start_ns + offset_ns - time.monotonic_ns()) / 1e9


def _nothing() -> None:
    return None


def detach(step: StepInFlight) -> None:
    """Undo the context changes ``start_step`` made now (a stream re-enters them chunk by chunk)."""
    tokens = step.tokens
    step.tokens = []
    for undo in reversed(tokens):
        undo()


def record_stream(
    spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Iterator[Any]:
    """Run a generator function as one recorded step, chunk by chunk (see the module's docstring)."""
    step = begin_step(spec, args, kwargs)
    if step is None:
        yield from fn(*args, **kwargs)
        return
    chunks = Chunks(step)
    undo = chunks.enter()
    try:
        source = iter(fn(*args, **kwargs))
    except BaseException as exc:
        undo()
        chunks.end(exc)
        raise
    undo()
    try:
        while True:
            undo = chunks.enter()
            try:
                chunk = next(source)
            except StopIteration:
                break
            finally:
                undo()
            chunks.add(chunk)
            yield chunk
    except GeneratorExit:  # the consumer stopped early: the step ends as recorded so far
        _close(source)
        chunks.end(None)
        raise
    except BaseException as exc:
        chunks.end(exc)
        raise
    chunks.end(None)


def _close(source: Iterator[Any]) -> None:
    close = getattr(source, "close", None)
    if callable(close):
        close()


async def record_stream_async(
    spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AsyncIterator[Any]:
    """``record_stream`` for async-generator functions."""
    step = begin_step(spec, args, kwargs)
    if step is None:
        async for chunk in fn(*args, **kwargs):
            yield chunk
        return
    chunks = Chunks(step)
    undo = chunks.enter()
    try:
        source = fn(*args, **kwargs).__aiter__()
    except BaseException as exc:
        undo()
        chunks.end(exc)
        raise
    undo()
    try:
        while True:
            undo = chunks.enter()
            try:
                chunk = await source.__anext__()
            except StopAsyncIteration:
                break
            finally:
                undo()
            chunks.add(chunk)
            yield chunk
    except GeneratorExit:
        aclose = getattr(source, "aclose", None)
        if callable(aclose):
            await aclose()
        chunks.end(None)
        raise
    except BaseException as exc:
        chunks.end(exc)
        raise
    chunks.end(None)
