"""Instrumentation: ``@tool``, ``@model_call`` and ``agent_run``; the run state and the life of a step.

The context variables that carry the active run, recording and replay live here too.
"""

from __future__ import annotations

from ._decorators import model_call, tool
from ._implicit import default_agent_name, end_implicit_run, implicit_replay_run
from ._outside import (
    recording_ended,
    recording_started,
    replay_ended,
    replay_started,
    warn_if_replay_active,
)
from ._runs import RunHandle, agent_commit, agent_run
from ._runtime import (
    RunState,
    StepIds,
    active_run,
    current_recording,
    current_replay,
    current_run,
    current_step,
    step_run,
)
from ._spec import ToolSpec, make_spec, positive_seconds, tool_spec
from ._steps import (
    Prepared,
    StepInFlight,
    call_recorded,
    call_recorded_async,
    prepare,
    record_error,
    start_step,
    step_attributes,
)
from ._streams import Chunks, due_in, record_stream, record_stream_async

__all__ = [
    "Chunks",
    "Prepared",
    "RunHandle",
    "RunState",
    "StepIds",
    "StepInFlight",
    "ToolSpec",
    "active_run",
    "agent_commit",
    "agent_run",
    "call_recorded",
    "call_recorded_async",
    "current_recording",
    "current_replay",
    "current_run",
    "current_step",
    "default_agent_name",
    "due_in",
    "end_implicit_run",
    "implicit_replay_run",
    "make_spec",
    "model_call",
    "positive_seconds",
    "prepare",
    "record_error",
    "record_stream",
    "record_stream_async",
    "recording_ended",
    "recording_started",
    "replay_ended",
    "replay_started",
    "start_step",
    "step_attributes",
    "step_run",
    "tool",
    "tool_spec",
    "warn_if_replay_active",
]
