"""The error hierarchy: one root, then configuration, tape and replay errors.

An error a test should show as a failure also subclasses ``AssertionError``.
Messages say what happened, quote the values, and end with the fix.
"""

from __future__ import annotations


class AgentReplayError(Exception):
    """Root of every error raised by otel-agent-replay."""


class ConfigurationError(AgentReplayError, ValueError):
    """An option or decorator argument is invalid."""


class TapeError(AgentReplayError):
    """A tape could not be used."""


class TapeNotFoundError(TapeError, FileNotFoundError):
    """The tape file does not exist."""


class TapeFormatError(TapeError, ValueError):
    """A tape (or a span in it) is malformed. ``path`` and ``line`` say where."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
