"""What the capture points ask of the current context: a replay that answers (not one that records), and
whether OpenTelemetry marked the work as its own. Imports nothing else of this room, so every capture
point (HTTP clients, MCP) can use it without a circle."""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context

from otel_agent_replay.instrumentation import current_replay

try:  # the SDK's span processors and OpenTelemetry's instrumentations mark their own requests with these keys
    from opentelemetry.context import _SUPPRESS_HTTP_INSTRUMENTATION_KEY as _HTTP_KEY
    from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY as _ALL_KEY
except ImportError:  # pragma: no cover - an older API
    _ALL_KEY, _HTTP_KEY = "suppress_instrumentation", "suppress_http_instrumentation"
SUPPRESS_HTTP_KEY: str = _HTTP_KEY
"""The context key that marks HTTP requests as instrumentation's own (never steps)."""
_SUPPRESS_KEYS = tuple(
    dict.fromkeys((_ALL_KEY, _HTTP_KEY, "suppress_instrumentation", "suppress_http_instrumentation"))
)


def suppressed() -> bool:
    """OpenTelemetry's own exporters (and instrumentations) mark their requests: those are never steps."""
    current = otel_context.get_current()  # one lookup of the context, then its keys (every request asks)
    return bool(current) and any(current.get(key) for key in _SUPPRESS_KEYS)


def replaying() -> Any:
    """The replay that answers calls made here, or None (none active, or one that records)."""
    session = current_replay.get()
    if session is None or getattr(session, "recording", False):
        return None
    return session
