"""``replay(tape)``: every ``@tool`` and ``@model_call`` answered from the tape.

Inside the block each decorated call is served by a double: the call key of its
redacted, canonical arguments is looked up among the unconsumed recorded steps of the
run being replayed (hit); a recorded step of that tool at the same position with other
arguments is drift; neither is a miss. A tool that is not read-only never runs. Replay
emits its own run and step spans, linked to the recorded ones.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from contextvars import Token
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from otel_agent_replay.capture import DEFAULT_REDACTOR, Redactor
from otel_agent_replay.core import (
    ConfigurationError,
    TapeNotFoundError,
    TapeStale,
    TapeUnused,
)
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import current_replay, positive_seconds
from otel_agent_replay.recorder import record
from otel_agent_replay.tape import Run, Tape, load_tape

from ._ledger import Divergence
from ._session import (
    MODEL_POLICIES,
    MODES,
    SIDE_EFFECT_POLICIES,
    STALE_VERSION_POLICIES,
    ReplaySession,
    select_runs,
)

F = TypeVar("F", bound=Callable[..., Any])


def _recorded_at(run: Run) -> _dt.datetime | None:
    if run.recorded_at:
        try:
            when = _dt.datetime.fromisoformat(run.recorded_at)
            return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)
        except ValueError:
            pass
    first = run.start_ns or (run.steps[0].start_ns if run.steps else 0)
    return _dt.datetime.fromtimestamp(first / 1e9, _dt.timezone.utc) if first else None


class replay:
    """Replay the agent runs on a tape: every ``@tool`` and ``@model_call`` served from it.

    ``source`` is a tape path or a loaded ``Tape``. Options (a contract): ``run_id`` /
    ``trace_id`` select runs (default: all, in order, as the agent starts them);
    ``mode`` is ``"none"`` (strict), ``"once"`` (record when the tape is missing),
    ``"new_episodes"`` (read-only misses run live and are appended) or ``"all"``
    (always record); ``side_effects="stub"`` or ``stub=(tool, ...)`` serve recorded
    results of tools that are not read-only (default: refused); ``fallbacks`` maps tools
    to fakes that serve their misses; ``overrides`` maps a tool (or ``(tool, n)``) to a
    value or exception that replaces the recorded result; ``max_age`` (seconds or
    timedelta) fails a stale tape; ``allow_unused`` lets recorded steps go unused;
    ``models="live"`` runs model calls for real while tools stay replayed; ``spans=False``
    emits no replay spans; ``declare`` gives side effects to tools that declared none;
    ``stale_versions="error"`` fails on a tool whose version changed; ``redactor`` must
    match the one used to record.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | Tape,
        *,
        run_id: str | None = None,
        trace_id: str | None = None,
        mode: str = "none",
        side_effects: str = "refuse",
        stub: Iterable[str] = (),
        fallbacks: Mapping[str, Callable[..., Any]] | None = None,
        overrides: Mapping[str | tuple[str, int], Any] | None = None,
        max_age: float | _dt.timedelta | None = None,
        allow_unused: bool = False,
        models: str = "tape",
        spans: bool = True,
        declare: Mapping[str, str] | None = None,
        stale_versions: str = "warn",
        redactor: Redactor | None = None,
    ) -> None:
        _check_choice("mode", mode, MODES)
        _check_choice("side_effects", side_effects, SIDE_EFFECT_POLICIES)
        _check_choice("models", models, MODEL_POLICIES)
        _check_choice("stale_versions", stale_versions, STALE_VERSION_POLICIES)
        if isinstance(stub, str):
            stub = (stub,)
        declare = dict(declare or {})
        for tool_name, effect in declare.items():
            if effect not in A.SIDE_EFFECTS:
                raise ConfigurationError(f"declare={{{tool_name!r}: {effect!r}}}: use one of {sorted(A.SIDE_EFFECTS)}")
        if isinstance(source, Tape) and mode in ("once", "all"):
            raise ConfigurationError(f"mode={mode!r} records, so it needs a tape path, not a loaded Tape")
        self.source = source
        self.run_id = run_id
        self.trace_id = trace_id
        self.mode = mode
        self.side_effects = side_effects
        self.stub = frozenset(stub)
        self.fallbacks = dict(fallbacks or {})
        self.overrides: dict[str | tuple[str, int], Any] = dict(overrides or {})
        self.max_age = positive_seconds(max_age, "max_age")
        self.allow_unused = allow_unused
        self.models = models
        self.spans = spans
        self.declare = declare
        self.stale_versions = stale_versions
        self.redactor = redactor or DEFAULT_REDACTOR
        self._stack: list[tuple[ReplaySession, Token[Any], record | None, Path | None]] = []

    def _path(self) -> Path | None:
        return None if isinstance(self.source, Tape) else Path(self.source)

    def __enter__(self) -> ReplaySession:
        path = self._path()
        recorder: record | None = None
        temp: Path | None = None
        if path is not None and (self.mode == "all" or (self.mode == "once" and not path.exists())):
            temp = path.with_name(f".{path.name}.recording-{os.getpid()}") if self.mode == "all" else None
            recorder = record(temp or path, redactor=self.redactor)
            recorder.__enter__()
            session = ReplaySession(self, None, str(path), recording=True)
        else:
            tape = self.source if isinstance(self.source, Tape) else self._load(path)
            self._check_age(tape)
            session = ReplaySession(self, tape, tape.path, recording=False)
        token = current_replay.set(session)
        self._stack.append((session, token, recorder, temp))
        return session

    def _load(self, path: Path | None) -> Tape:
        assert path is not None
        try:
            return load_tape(path)
        except TapeNotFoundError as exc:
            raise TapeNotFoundError(
                f"{path}: no tape to replay (mode={self.mode!r}); record it first, or use mode='once' to "
                "record it on the first run"
            ) from exc

    def _check_age(self, tape: Tape) -> None:
        if self.max_age is None:
            return
        now = _dt.datetime.now(_dt.timezone.utc)
        for run in select_runs(tape, self):
            when = _recorded_at(run)
            if when is not None and (now - when).total_seconds() > self.max_age:
                raise TapeStale(
                    f"{tape.path}: run {run.run_id} was recorded at {when.isoformat(timespec='seconds')}, "
                    f"{(now - when).total_seconds() / 86400:.1f} days ago, older than max_age="
                    f"{self.max_age:g}s; re-record it (mode='all') so the fixtures follow today's APIs"
                )

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        session, token, recorder, temp = self._stack.pop()
        current_replay.reset(token)
        if recorder is not None:
            recorder.__exit__(exc_type, exc, tb)
            path = self._path()
            if temp is not None and path is not None:
                if exc is None and temp.exists():
                    os.replace(temp, path)
                else:
                    temp.unlink(missing_ok=True)
        session.finish(exc)

    async def __aenter__(self) -> ReplaySession:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                async with self:
                    return await fn(*args, **kwargs)

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return cast(F, sync_wrapper)


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigurationError(f"replay({name}={value!r}): use one of {', '.join(map(repr, allowed))}")


__all__ = ["Divergence", "ReplaySession", "TapeUnused", "replay"]
