"""otel-agent-replay: agent runs as OpenTelemetry spans, recorded to tapes and replayed offline.

This module defines nothing: it re-exports the public names from the subpackages that own them.
Public names (a contract): ``tool``, ``model_call``, ``agent_run``, ``record``, ``load_tape``,
``replay``, ``compare``, ``Redactor`` and the errors below ``AgentReplayError``.
"""

from __future__ import annotations

from otel_agent_replay.capture import Limits, Redactor
from otel_agent_replay.comparison import Comparison, Difference, Policy, RunView, compare
from otel_agent_replay.core import (
    AgentReplayError,
    AgentReplayWarning,
    ConfigurationError,
    DivergenceKind,
    EndpointError,
    ModelPolicy,
    OtlpWarning,
    RecordedToolError,
    RecordingWarning,
    RecordMode,
    ReplayDivergence,
    ReplayError,
    SideEffect,
    SideEffectPolicy,
    SideEffectRefused,
    StalePolicy,
    StepKind,
    StoreError,
    TapeDrift,
    TapeError,
    TapeFormatError,
    TapeMiss,
    TapeNotFoundError,
    TapePayloadMissing,
    TapeStale,
    TapeUnused,
    TapeWarning,
    __version__,
)
from otel_agent_replay.instrumentation import RunHandle, agent_run, model_call, tool
from otel_agent_replay.integrations import MODEL_ROUTES, HttpRoute
from otel_agent_replay.recorder import Recording, record
from otel_agent_replay.replayer import Divergence, ReplayOptions, ReplaySession, ReplayStats, replay
from otel_agent_replay.store import Store, open_store
from otel_agent_replay.tape import Run, Step, StepError, Tape, load_tape

__all__ = [
    "MODEL_ROUTES",
    "AgentReplayError",
    "AgentReplayWarning",
    "Comparison",
    "ConfigurationError",
    "Difference",
    "Divergence",
    "DivergenceKind",
    "EndpointError",
    "HttpRoute",
    "Limits",
    "ModelPolicy",
    "OtlpWarning",
    "Policy",
    "RecordMode",
    "RecordedToolError",
    "Recording",
    "RecordingWarning",
    "Redactor",
    "ReplayDivergence",
    "ReplayError",
    "ReplayOptions",
    "ReplaySession",
    "ReplayStats",
    "Run",
    "RunHandle",
    "RunView",
    "SideEffect",
    "SideEffectPolicy",
    "SideEffectRefused",
    "StalePolicy",
    "Step",
    "StepError",
    "StepKind",
    "Store",
    "StoreError",
    "Tape",
    "TapeDrift",
    "TapeError",
    "TapeFormatError",
    "TapeMiss",
    "TapeNotFoundError",
    "TapePayloadMissing",
    "TapeStale",
    "TapeUnused",
    "TapeWarning",
    "__version__",
    "agent_run",
    "compare",
    "load_tape",
    "model_call",
    "open_store",
    "record",
    "replay",
    "tool",
]
