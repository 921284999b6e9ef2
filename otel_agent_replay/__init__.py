"""otel-agent-replay: agent runs as OpenTelemetry spans, recorded to tapes and replayed offline.

Public names (a contract): ``tool``, ``model_call``, ``agent_run``, ``record``,
``load_tape``, ``replay``, ``Redactor`` and the errors below ``AgentReplayError``.
"""

from __future__ import annotations

from .compare import Comparison, Policy, compare
from .errors import (
    AgentReplayError,
    ConfigurationError,
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
)
from .http_client import EndpointError
from .instrument import RunHandle, agent_run, model_call, tool
from .model import Run, Step, StepError, Tape
from .otlp import OtlpWarning
from .record import Recording, record
from .redact import Redactor
from .replay import Divergence, ReplaySession, replay
from .tape import load_tape
from .views import RunView

__version__ = "0.1.0"

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
