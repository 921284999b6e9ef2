"""Every error and warning of the SDK: one error root, one warning root.

An error a test should show as a failure also subclasses ``AssertionError``.
Messages say what happened, quote the values, and end with the fix.

Every class here is public and says so: its ``__module__`` is ``otel_agent_replay`` (where users import
it from), so a traceback's last line and pytest's one-line summary read ``otel_agent_replay.TapeDrift``
or ``TapeDrift``, not the private module's path; ``pickle`` finds the class there too. The classes whose
constructor takes more than the message rebuild themselves from their attributes (``__reduce__``).
"""

from __future__ import annotations

from typing import Any

PUBLIC_MODULE = "otel_agent_replay"
"""The module every public error and warning reports as its own (``TapeDrift.__module__``)."""


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], kwargs: dict[str, Any]) -> BaseException:
    """Unpickling: the error made again by its constructor (its state is restored after)."""
    return cls(*args, **kwargs)


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
        self._message = message
        super().__init__(where + message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self._message,), {"path": self.path, "line": self.line}), self.__dict__)


class TapePayloadMissing(TapeError):
    """A recorded result was shortened and its full value is not stored beside the tape."""


class ReplayError(AgentReplayError):
    """A replay could not serve a call as recorded."""


class ReplayDivergence(ReplayError, AssertionError):
    """The replayed behaviour differs from the recording: a test failure, not a crash.

    ``kind`` names the divergence (``drift``, ``miss``, ``unused``, ``refused``, ``stale``).
    """

    kind = "divergence"


class TapeDrift(ReplayDivergence):
    """A call at a recorded position came with other arguments than recorded."""

    kind = "drift"


class TapeMiss(ReplayDivergence):
    """A call the tape does not have (no recorded step with its key, none at its position)."""

    kind = "miss"


class TapeUnused(ReplayDivergence):
    """Recorded steps that the replayed run never asked for."""

    kind = "unused"


class SideEffectRefused(ReplayDivergence):
    """A tool that is not read-only was called during a replay and was not allowed to be stubbed."""

    kind = "refused"


class TapeStale(ReplayDivergence):
    """The tape is older than allowed, or a tool's version changed since it was recorded."""

    kind = "stale"


class NetworkBlocked(ReplayDivergence):
    """A strict replay stopped an outgoing connection to a host that is not allowed, before any byte went out.

    ``host`` and ``port`` say where the agent's code tried to connect.
    """

    kind = "blocked"

    def __init__(self, message: str, *, host: str = "", port: int | None = None) -> None:
        self.host = host
        self.port = port
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, {"host": self.host, "port": self.port}), self.__dict__)


class UnknownAgent(ReplayDivergence):
    """A live run's agent has no recorded run on the tape (the message names the agents it has)."""

    kind = "agent"


class RecordedToolError(ReplayError):
    """A recorded tool failure whose exception type cannot be rebuilt safely, raised again on replay."""

    def __init__(self, type_name: str, message: str) -> None:
        self.type_name = type_name
        self.recorded_message = message
        super().__init__(f"{type_name}: {message} (raised by the tool when it was recorded)")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), (self.type_name, self.recorded_message), {}), self.__dict__)


class EndpointError(AgentReplayError):
    """A backend could not be reached, or did not give what was asked (the CLI exits with 3)."""


class StoreError(AgentReplayError):
    """The evidence store could not be opened, read or written (the database said no)."""


class AgentReplayWarning(UserWarning):
    """Root of every warning issued by otel-agent-replay."""


class TapeWarning(AgentReplayWarning):
    """Something about a tape needs attention: a skipped torn line, an expired step, a changed tool version."""


class ReplayWarning(AgentReplayWarning):
    """Something about a replay needs attention but does not fail it."""


class RecordingWarning(AgentReplayWarning, RuntimeWarning):
    """Spans of a recording could not be written to its tape."""


class OtlpWarning(AgentReplayWarning, RuntimeWarning):
    """Spans that reached the tape could not be sent to the OTLP endpoint."""


PUBLIC_CLASSES: tuple[type[BaseException], ...] = tuple(
    value
    for value in dict(globals()).values()
    if isinstance(value, type) and issubclass(value, (AgentReplayError, AgentReplayWarning))
)
"""Every error and warning class of the SDK (all public: the top-level package re-exports each)."""

for _cls in PUBLIC_CLASSES:
    _cls.__module__ = PUBLIC_MODULE
del _cls
