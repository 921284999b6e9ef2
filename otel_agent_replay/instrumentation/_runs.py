"""``agent_run``: one run of an agent as a parent span, and the handle it yields."""

from __future__ import annotations

import contextvars
import datetime as _dt
import functools
import inspect
import os
import platform
import shutil
import subprocess
import uuid
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind

from otel_agent_replay.capture import (
    DEFAULT_CAPTURE,
    DEFAULT_REDACTOR,
    Capture,
    Limits,
    bind_arguments,
    capture_json,
    hash_text,
)
from otel_agent_replay.core import ConfigurationError, RecordingWarning, Scope, __version__
from otel_agent_replay.core import attributes as A

from ._outside import ACTIVE_RECORDINGS, ACTIVE_REPLAYS, only_recording
from ._runtime import (
    ReplayHook,
    RunState,
    current_recording,
    current_replay,
    current_run,
    current_step,
    run_ended,
    run_started,
)
from ._steps import record_error, tracer

_DEFAULT_LIMITS = Limits()

F = TypeVar("F", bound=Callable[..., Any])


class RunHandle:
    """The handle ``agent_run`` yields: ids of the run and ``set_output``."""

    __slots__ = ("_capture", "agent_name", "output", "run_id", "span", "span_id", "steps_lost", "trace_id")

    def __init__(self, run_id: str, agent_name: str, span: Span, capture: Capture) -> None:
        ctx = span.get_span_context()
        self.run_id = run_id
        self.agent_name = agent_name
        self.span = span
        self.trace_id = f"{ctx.trace_id:032x}"
        self.span_id = f"{ctx.span_id:016x}"
        self.output: object = None
        self.steps_lost = 0
        """Steps that could not reach the tape (a stream still open at the run's end whose end failed)."""
        self._capture = capture

    def set_output(self, value: object) -> None:
        """Record the run's final output (``agent_replay.output``)."""
        self.output = value
        self.span.set_attribute(A.OUTPUT, capture_json(value, self._capture))

    def __repr__(self) -> str:
        return f"RunHandle(run_id={self.run_id!r}, agent_name={self.agent_name!r}, trace_id={self.trace_id!r})"


@functools.lru_cache(maxsize=1)
def agent_commit() -> str | None:
    """The commit of the git checkout the agent runs in (``git rev-parse HEAD`` in the working
    directory), looked up once per process; None outside a checkout, without git, or on any failure.
    A failure here never reaches the agent."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        # in a context of its own: this is not a process of the agent's (a block's spawn hooks leave it alone)
        done = contextvars.Context().run(
            subprocess.run,
            [git, "rev-parse", "HEAD"],
            cwd=os.getcwd(),
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) in (40, 64) else None


_PYTHON = f"{platform.python_implementation()} {platform.python_version()}"


_Entered = tuple[RunState, RunHandle, list[Callable[[], None]], ReplayHook | None]
"""What the end of a run needs: its state, handle, the undo steps and the replay it is bound to."""


class agent_run(Scope[RunHandle, _Entered]):
    """One run of an agent: a parent span ``invoke_agent {agent_name}`` for its steps.

    Use as ``with agent_run("planner") as run:``, ``async with``, or as a decorator
    (``@agent_run("planner")``: each call is a new run whose input is the call's
    arguments and whose output is its return value). Inside an existing span the run
    becomes that span's child.
    """

    def __init__(
        self,
        agent_name: str,
        *,
        run_id: str | None = None,
        agent_version: str | None = None,
        task: str | None = None,
        input: object = None,
        conversation_id: str | None = None,
    ) -> None:
        super().__init__()
        self._signature: inspect.Signature | None = None
        """The decorated function's signature, when used as a decorator."""
        if not agent_name or not isinstance(agent_name, str):
            raise ConfigurationError(f"agent_run needs an agent name (a non-empty string), got {agent_name!r}")
        # The name reaches the run span's name and gen_ai.agent.name, and binds runs at replay: it is
        # redacted once, here, with the default rules (as tool names are), so record and replay agree.
        self.agent_name = DEFAULT_REDACTOR.redact_text(agent_name)
        self.run_id = run_id
        self.agent_version = agent_version
        self.task = task
        self.input = input
        self.conversation_id = conversation_id

    def _options(self, **changes: Any) -> agent_run:
        kw: dict[str, Any] = {
            "run_id": self.run_id,
            "agent_version": self.agent_version,
            "task": self.task,
            "input": self.input,
            "conversation_id": self.conversation_id,
        }
        kw.update(changes)
        return agent_run(self.agent_name, **kw)

    def _start(self) -> tuple[RunHandle, _Entered]:
        recording = current_recording.get()
        session = current_replay.get()
        joined = False
        if recording is None and session is None and ACTIVE_RECORDINGS and not ACTIVE_REPLAYS:
            recording = only_recording(self.agent_name)  # a thread started without the record() context
            joined = recording is not None
        capture = cast(Capture, getattr(recording, "capture", DEFAULT_CAPTURE))
        # a run id the caller gave may quote a secret: redacted here, so every step's ids carry the same text
        run_id = capture.redactor.redact_text(self.run_id) if self.run_id else uuid.uuid4().hex
        attrs: dict[str, Any] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_AGENT_NAME: self.agent_name,
            A.RUN_ID: run_id,
            A.MODE: A.MODE_RECORD,
            A.SCHEMA_VERSION_ATTR: A.SCHEMA_VERSION,
            A.RECORDED_AT: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds"),
            A.SDK_VERSION: __version__,
            A.PYTHON_VERSION: _PYTHON,
        }
        commit = agent_commit()
        if commit is not None:
            attrs[A.AGENT_COMMIT] = commit
        if recording is not None and session is None and capture.limits != _DEFAULT_LIMITS:
            # replay must shorten live arguments with the same caps, or long ones drift
            attrs[A.MAX_STRING] = capture.limits.max_string
            attrs[A.MAX_RESULT_BYTES] = capture.limits.max_result_bytes
        redact = capture.redactor.redact_text
        if self.conversation_id is not None:
            attrs[A.GEN_AI_CONVERSATION_ID] = redact(self.conversation_id)
        if self.agent_version is not None:
            attrs[A.AGENT_VERSION] = redact(self.agent_version)
        if self.task is not None:
            attrs[A.TASK] = redact(self.task)
        if self.input is not None:
            text = capture_json(self.input, capture, canonical=True)
            attrs[A.INPUT] = text
            attrs[A.INPUT_HASH] = hash_text(text)
        links: list[Link] = []
        replay_run: object | None = None
        if session is not None:
            extra, links, replay_run = session.begin_run(self.agent_name, run_id, attrs.get(A.INPUT_HASH))
            attrs.update(extra)
        undo: list[Callable[[], None]] = []
        if joined:
            rec_token = current_recording.set(recording)  # the router reads it when the run span starts
            undo.append(lambda: current_recording.reset(rec_token))
        span: Span
        if session is not None and not session.spans:
            span = INVALID_SPAN
        else:
            span = tracer.start_span(
                A.run_span_name(self.agent_name), kind=SpanKind.INTERNAL, attributes=attrs, links=links
            )
            ctx_token = otel_context.attach(trace.set_span_in_context(span))
            undo.append(lambda: otel_context.detach(ctx_token))
        state = RunState(run_id, self.agent_name, span, capture, recording)
        state.replay = replay_run
        handle = RunHandle(run_id, self.agent_name, span, capture)
        run_token = current_run.set(state)
        undo.append(lambda: current_run.reset(run_token))
        step_token = current_step.set(None)
        undo.append(lambda: current_step.reset(step_token))
        run_started(state)
        return handle, (state, handle, undo, session)

    def _stop(
        self,
        entered: tuple[RunState, RunHandle, list[Callable[[], None]], ReplayHook | None],
        exc: BaseException | None,
    ) -> None:
        state, handle, undo, session = entered
        left_open, lost = state.end_open_streams()
        if left_open:
            warn_left_open(left_open)
        if lost:
            handle.steps_lost += len(lost)
            warn_lost_streams(handle, lost)
        run_ended(state)
        state.span.set_attribute(A.RUN_STEPS, state.steps_started)  # the count ``check`` holds the tape to
        try:
            if exc is not None:
                record_error(state.span, exc, state.capture.redactor)
        finally:
            for step in reversed(undo):
                step()
            try:
                if session is not None and state.replay is not None:
                    session.end_run(handle.output, state.span)  # the span is still open: events may go on it
            finally:
                state.span.end()

    def _for_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> agent_run:
        """As a decorator, each call is a new run whose input is the call's bound arguments."""
        if self.input is not None:
            return self._options()
        try:
            bound = bind_arguments(self._signature, args, kwargs) if self._signature is not None else {}
        except TypeError:
            bound = {}
        return self._options(input=bound or None)

    def _returned(self, handle: RunHandle, result: object) -> None:
        handle.set_output(result)

    def __call__(self, fn: F) -> F:
        # A copy per decorated function, so one agent_run(...) can decorate several functions.
        bound = self._options()
        bound._signature = inspect.signature(fn)
        return Scope.__call__(bound, fn)


_warned_open: set[str] = set()


def warn_lost_streams(handle: RunHandle, lost: list[tuple[str, str]]) -> None:
    """Say which streamed steps were lost: still open at the run's end, and ending them failed."""
    which = "; ".join(f"{name!r} ({why})" for name, why in lost)
    warnings.warn(
        f"run {handle.run_id}: {len(lost)} streamed step(s) were still open when the run ended, and ending them "
        f"failed, so they may be missing from the tape or lack their result: {which}. Consume or close each "
        "stream inside the run (counted in the run handle's steps_lost)",
        RecordingWarning,
        stacklevel=4,
    )


def warn_left_open(names: list[str]) -> None:
    """Say, once per tool or model function, that its stream was still open when its run ended."""
    fresh = [name for name in dict.fromkeys(names) if name not in _warned_open]
    _warned_open.update(fresh)
    if fresh:
        warnings.warn(
            f"the stream of {', '.join(map(repr, fresh))} was still open when its run ended: its step ends with "
            "the chunks received so far. Consume or close the stream inside the run (a `with` block, or "
            "`close()`/`aclose()` when you stop early) to record it as the agent used it.",
            RecordingWarning,
            stacklevel=4,
        )
