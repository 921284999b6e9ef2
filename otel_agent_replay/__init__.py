"""otel-agent-replay: agent runs as OpenTelemetry spans, recorded to tapes and replayed offline.

Public names (a contract): ``tool``, ``model_call``, ``agent_run``, ``record``,
``load_tape``, ``replay``, ``Redactor`` and the errors below ``AgentReplayError``.
"""

from __future__ import annotations

from otel_agent_replay.capture import Redactor
from otel_agent_replay.comparison import Comparison, Policy, RunView, compare
from otel_agent_replay.core import (
    AgentReplayError,
    ConfigurationError,
    EndpointError,
    OtlpWarning,
    RecordedToolError,
    ReplayDivergence,
    ReplayError,
    SideEffectRefused,
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
from otel_agent_replay.recorder import Recording, record
from otel_agent_replay.replayer import Divergence, ReplaySession, replay
from otel_agent_replay.tape import Run, Step, StepError, Tape, load_tape

__all__ = [
    "AgentReplayError",
    "Comparison",
    "ConfigurationError",
    "Divergence",
    "EndpointError",
    "OtlpWarning",
    "Policy",
    "RecordedToolError",
    "Recording",
    "Redactor",
    "ReplayDivergence",
    "ReplayError",
    "ReplaySession",
    "Run",
    "RunHandle",
    "RunView",
    "SideEffectRefused",
    "Step",
    "StepError",
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
    "record",
    "replay",
    "tool",
]
