"""Serving a generator step in a replay: the recorded chunks in order (paced on request), the
recorded mid-stream error after them, or the live (or fake) stream as a replay span of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from typing import Any, cast

import orjson

from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import Chunks, ToolSpec, due_in, record_stream, record_stream_async

from ._index import rebuild_exception, recorded_result
from ._serving import Decision, Recorded, ServingSession


def serve_stream(
    session: ServingSession, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Iterator[Any]:
    """Serve one call of a generator function: the recorded chunks in order (paced on request),
    the recorded mid-stream error after them; a consumer that stops early ends the step there."""
    serving = session._begin_serving(spec, args, kwargs)
    if isinstance(serving, Recorded):
        chunks: list[Any] = []
        inner = cast(Generator[Any, None, None], record_stream(spec, fn, args, kwargs))
        try:
            for chunk in inner:
                chunks.append(chunk)
                yield chunk
        except GeneratorExit:
            inner.close()
            serving.done(chunks)
            raise
        except BaseException as exc:
            serving.fail(exc)
            raise
        serving.done(chunks)
        return
    served = Chunks(serving.step)
    serving.step = None  # the chunks end the replay span
    try:
        if serving.decision.how == "tape":
            recorded, offsets, error = stream_from_tape(session, serving.decision, spec)
            for n, chunk in enumerate(recorded):
                if session.pace and n < len(offsets):
                    delay = due_in(served.start, offsets[n])
                    if delay > 0:
                        time.sleep(delay)
                served.add(chunk)
                yield chunk
            if error is not None:
                raise error
        else:
            undo = served.enter()
            try:
                source = iter((serving.decision.fake or fn)(*args, **kwargs))
            finally:
                undo()
            while True:
                undo = served.enter()
                try:
                    chunk = next(source)
                except StopIteration:
                    break
                finally:
                    undo()
                served.add(chunk)
                yield chunk
    except GeneratorExit:
        serving.done(served.items)
        served.end(None)
        raise
    except BaseException as exc:
        serving.fail(exc)
        served.end(exc)
        raise
    serving.done(served.items)
    served.end(None)


async def serve_stream_async(
    session: ServingSession, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AsyncIterator[Any]:
    """``stream`` for async-generator functions."""
    serving = session._begin_serving(spec, args, kwargs)
    if isinstance(serving, Recorded):
        chunks: list[Any] = []
        inner = cast(AsyncGenerator[Any, None], record_stream_async(spec, fn, args, kwargs))
        try:
            async for chunk in inner:
                chunks.append(chunk)
                yield chunk
        except GeneratorExit:
            await inner.aclose()
            serving.done(chunks)
            raise
        except BaseException as exc:
            serving.fail(exc)
            raise
        serving.done(chunks)
        return
    served = Chunks(serving.step)
    serving.step = None
    try:
        if serving.decision.how == "tape":
            recorded, offsets, error = stream_from_tape(session, serving.decision, spec)
            for n, chunk in enumerate(recorded):
                if session.pace and n < len(offsets):
                    delay = due_in(served.start, offsets[n])
                    if delay > 0:
                        await asyncio.sleep(delay)
                served.add(chunk)
                yield chunk
            if error is not None:
                raise error
        else:
            undo = served.enter()
            try:
                source = (serving.decision.fake or fn)(*args, **kwargs).__aiter__()
            finally:
                undo()
            while True:
                undo = served.enter()
                try:
                    chunk = await source.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    undo()
                served.add(chunk)
                yield chunk
    except GeneratorExit:
        serving.done(served.items)
        served.end(None)
        raise
    except BaseException as exc:
        serving.fail(exc)
        served.end(exc)
        raise
    serving.done(served.items)
    served.end(None)


def stream_from_tape(
    session: ServingSession, decision: Decision, spec: ToolSpec
) -> tuple[list[Any], list[int], BaseException | None]:
    """A recorded stream: its chunks rebuilt, their offsets, and the error it ended with."""
    if decision.has_override:
        value = decision.override
        if isinstance(value, BaseException) or (isinstance(value, type) and issubclass(value, BaseException)):
            return [], [], value if isinstance(value, BaseException) else value()
        return list(value), [], None
    step = decision.step
    assert step is not None
    hint = spec.result_hint()
    data = recorded_result(step, session.tape_path, list[hint] if hint is not None else None)  # type: ignore[valid-type]
    chunks = list(data) if isinstance(data, (list, tuple)) else ([] if data is None else [data])
    offsets = _offsets(step.attributes.get(A.STREAM_OFFSETS))
    error = rebuild_exception(step.error, step.attributes) if step.error is not None else None
    return chunks, offsets, error


def _offsets(text: Any) -> list[int]:
    if not isinstance(text, str):
        return []
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    return [int(v) for v in value if isinstance(v, (int, float))] if isinstance(value, list) else []
