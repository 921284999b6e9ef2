"""The package's version, spelled once (the CLI, the tape exporter's resource and the docs read it here).

It sits beside the top-level ``__init__`` rather than in ``core`` so that ``otel-agent-replay --version``
reads it without importing ``core`` (``core`` re-exports it as ``otel_agent_replay.core.__version__``).
"""

__version__ = "0.1.0"
