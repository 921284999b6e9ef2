"""The words every other subpackage shares: errors and warnings, attribute names, choices, the version."""

from __future__ import annotations

from . import attributes
from ._errors import (
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
from ._version import __version__

__all__ = [
    "AgentReplayError",
    "ConfigurationError",
    "RecordedToolError",
    "ReplayDivergence",
    "ReplayError",
    "SideEffectRefused",
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
    "attributes",
]
