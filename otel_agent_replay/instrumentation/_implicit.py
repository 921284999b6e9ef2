"""Implicit runs: a step inside ``record()`` but outside every ``agent_run`` belongs to the block's own run.

The first such step opens it: an ``agent_run`` of the agent ``record(..., agent=...)`` names, else
the test's name under pytest, else the script's; it is entered in a context of its own (so no token
of it leaks into the caller's) under the OpenTelemetry context the block was entered in, and the
block's end ends it. Its steps join it as steps from a thread without a run's context join a run.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context

from otel_agent_replay.core import attributes as A

from ._runs import agent_run
from ._runtime import RunState, current_recording, implicit_hooks

_lock = threading.Lock()
_open_runs: dict[int, tuple[RunState, contextvars.Context, agent_run, Any]] = {}
"""id(recording or replay) → its implicit run, the context it was entered in, its agent_run, what its end needs."""


def default_agent_name() -> str:
    """The implicit run's agent when ``record(agent=...)`` names none: the pytest test's name, else the script's."""
    test = os.environ.get("PYTEST_CURRENT_TEST")
    if test:
        name = test.rsplit("::", 1)[-1].rsplit(" (", 1)[0]
        if name:
            return name
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
    return script or "python"


def implicit_run(recording: object) -> RunState:
    """The implicit run of ``recording``, opened on first use."""
    return _open(
        recording,
        lambda: getattr(recording, "agent", None) or default_agent_name(),
        getattr(recording, "otel_context", None),
        recording,
    )


def implicit_replay_run(session: object, agent_name: str | None) -> RunState:
    """The implicit run of a replay (calls made outside every live ``agent_run``), opened on first use: a
    run of ``agent_name`` (the recorded implicit run's agent), bound by the session like any run."""
    return _open(session, lambda: agent_name or default_agent_name(), None, None)


def _open(owner: object, name: Callable[[], str], parent: Any, recording: object | None) -> RunState:
    key = id(owner)
    with _lock:
        found = _open_runs.get(key)
        if found is not None:
            return found[0]
        run = agent_run(name())
        ctx = contextvars.copy_context()

        def enter() -> tuple[RunState, Any]:
            if recording is not None:
                current_recording.set(recording)
            if parent is not None:
                otel_context.attach(parent)
            handle, entered = run._start()
            handle.span.set_attribute(A.IMPLICIT_RUN, True)
            return entered[0], entered

        state, entered = ctx.run(enter)
        _open_runs[key] = (state, ctx, run, entered)
        return state


def end_implicit_run(owner: object, error: BaseException | None = None) -> None:
    """End the implicit run of a recording or a replay, if it opened one (called as its block ends)."""
    with _lock:
        found = _open_runs.pop(id(owner), None)
    if found is not None:
        _state, ctx, run, entered = found
        ctx.run(run._stop, entered, error)


implicit_hooks.append(implicit_run)
