"""otel-agent-replay: agent runs as OpenTelemetry spans, recorded to tapes and replayed offline.

This module defines nothing: it re-exports the public names from the subpackages that own them,
each on first use (PEP 562), so that ``import otel_agent_replay`` (and with it the pytest plugin's
entry point and the CLI) costs almost nothing until a name is used; ``from otel_agent_replay import
tool`` imports only what ``tool`` needs. The imports under ``TYPE_CHECKING`` are what type checkers
read; ``tests/test_layout.py`` checks that they, ``_HOMES`` and ``__all__`` name the same things.
Public names (a contract): ``tool``, ``model_call``, ``agent_run``, ``record``, ``load_tape``,
``replay``, ``compare``, ``Redactor`` and the errors below ``AgentReplayError``.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers treat the name alike)
if TYPE_CHECKING:
    from otel_agent_replay.capture import Limits, Redactor
    from otel_agent_replay.comparison import Comparison, Difference, Policy, RunView, compare
    from otel_agent_replay.core import (
        AgentReplayError,
        AgentReplayWarning,
        ConfigurationError,
        DivergenceKind,
        DriftPolicy,
        EndpointError,
        MissPolicy,
        ModelPolicy,
        NetworkBlocked,
        NetworkPolicy,
        OtlpWarning,
        OutsidePolicy,
        Pace,
        RecordedToolError,
        RecordingWarning,
        RecordMode,
        ReplayDivergence,
        ReplayError,
        ReplayWarning,
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
        UnknownAgent,
        __version__,
    )
    from otel_agent_replay.instrumentation import RunHandle, agent_run, model_call, tool
    from otel_agent_replay.integrations import MODEL_ROUTES, HttpRoute
    from otel_agent_replay.recorder import Recording, record
    from otel_agent_replay.regression import RegressResult, regress, rescore
    from otel_agent_replay.replayer import (
        Conformance,
        Divergence,
        ReplayOptions,
        ReplaySession,
        ReplayStats,
        ToolConformance,
        conform,
        replay,
    )
    from otel_agent_replay.store import Evaluation, Store, open_store
    from otel_agent_replay.tape import Run, Step, StepError, Tape, load_tape

_HOMES: dict[str, tuple[str, ...]] = {
    "capture": ("Limits", "Redactor"),
    "comparison": ("Comparison", "Difference", "Policy", "RunView", "compare"),
    "core": (
        "AgentReplayError",
        "AgentReplayWarning",
        "ConfigurationError",
        "DivergenceKind",
        "DriftPolicy",
        "EndpointError",
        "MissPolicy",
        "ModelPolicy",
        "NetworkBlocked",
        "NetworkPolicy",
        "OtlpWarning",
        "OutsidePolicy",
        "Pace",
        "RecordedToolError",
        "RecordingWarning",
        "RecordMode",
        "ReplayDivergence",
        "ReplayError",
        "ReplayWarning",
        "SideEffect",
        "SideEffectPolicy",
        "SideEffectRefused",
        "StalePolicy",
        "StepKind",
        "StoreError",
        "TapeDrift",
        "TapeError",
        "TapeFormatError",
        "TapeMiss",
        "TapeNotFoundError",
        "TapePayloadMissing",
        "TapeStale",
        "TapeUnused",
        "TapeWarning",
        "UnknownAgent",
        "__version__",
    ),
    "instrumentation": ("RunHandle", "agent_run", "model_call", "tool"),
    "integrations": ("MODEL_ROUTES", "HttpRoute"),
    "recorder": ("Recording", "record"),
    "regression": ("RegressResult", "regress", "rescore"),
    "replayer": (
        "Conformance",
        "Divergence",
        "ReplayOptions",
        "ReplaySession",
        "ReplayStats",
        "ToolConformance",
        "conform",
        "replay",
    ),
    "store": ("Evaluation", "Store", "open_store"),
    "tape": ("Run", "Step", "StepError", "Tape", "load_tape"),
}
"""Each subpackage and the public names it owns."""

if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all attribute
    _WHERE = {name: home for home, names in _HOMES.items() for name in names}

    def __getattr__(name: str) -> object:
        """A public name, imported from its subpackage the first time it is asked for."""
        home = _WHERE.get(name)
        if home is None:
            raise AttributeError(f"module 'otel_agent_replay' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"otel_agent_replay.{home}"), name)
        globals()[name] = value  # asked once: later lookups are plain module attributes
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))


__all__ = [
    "MODEL_ROUTES",
    "AgentReplayError",
    "AgentReplayWarning",
    "Comparison",
    "ConfigurationError",
    "Conformance",
    "Difference",
    "Divergence",
    "DivergenceKind",
    "DriftPolicy",
    "EndpointError",
    "Evaluation",
    "HttpRoute",
    "Limits",
    "MissPolicy",
    "ModelPolicy",
    "NetworkBlocked",
    "NetworkPolicy",
    "OtlpWarning",
    "OutsidePolicy",
    "Pace",
    "Policy",
    "RecordMode",
    "RecordedToolError",
    "Recording",
    "RecordingWarning",
    "Redactor",
    "RegressResult",
    "ReplayDivergence",
    "ReplayError",
    "ReplayOptions",
    "ReplaySession",
    "ReplayStats",
    "ReplayWarning",
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
    "ToolConformance",
    "UnknownAgent",
    "__version__",
    "agent_run",
    "compare",
    "conform",
    "load_tape",
    "model_call",
    "open_store",
    "record",
    "regress",
    "replay",
    "rescore",
    "tool",
]
