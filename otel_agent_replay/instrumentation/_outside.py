"""The replays active in the process, and the guard for calls made outside their context.

A replay is installed in a context variable, so only the code that runs in its context (and
the threads and tasks that received a copy of it) is served by it. A decorated call made
elsewhere while a replay is active (a ``threading.Thread`` or an executor worker started
without ``contextvars.copy_context().run``, a thread or task created before the block) would
run the real function: fail closed, and ask each active replay whether it may run.

A replay whose ``__exit__`` never ran would stay active for the rest of the process, so the
next ``record()`` or ``replay()`` and the interpreter's exit warn about it.

Recordings are noted too: a run started in a thread that did not receive a copy of the
context while exactly one ``record()`` is active joins that recording (as steps join the only
active run); with several, it cannot know which, and warns once with the fix.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings
from typing import Any, Protocol

from otel_agent_replay.core import RecordingWarning, ReplayWarning


class OutsideGuard(Protocol):
    """What the guard asks of an active replay (implemented by ``replayer.ReplaySession``)."""

    tape_path: str | None

    def outside_call(self, spec: Any) -> BaseException | None:
        """Count a call made outside the replay's context; the error refusing it, or None to let it run."""
        ...


ACTIVE_REPLAYS: list[OutsideGuard] = []
"""The replays active in the process (read without the lock on the hot path: a list's truth is atomic)."""
_entered_at: dict[int, str] = {}
_lock = threading.Lock()
_atexit_registered = False
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _caller() -> str:
    """``file:line`` of the first frame outside this package (where the replay was entered)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"


def replay_started(guard: OutsideGuard) -> None:
    """Note a replay that serves calls (a replay that records is not one)."""
    global _atexit_registered
    with _lock:
        ACTIVE_REPLAYS.append(guard)
        _entered_at[id(guard)] = _caller()
        if not _atexit_registered:
            atexit.register(_warn_at_exit)
            _atexit_registered = True


def replay_ended(guard: OutsideGuard) -> None:
    with _lock:
        if guard in ACTIVE_REPLAYS:
            ACTIVE_REPLAYS.remove(guard)
        _entered_at.pop(id(guard), None)


def _describe(guard: OutsideGuard) -> str:
    return f"replay({guard.tape_path or 'a loaded Tape'!s}) entered at {_entered_at.get(id(guard), '?')}"


def warn_if_replay_active(starting: str) -> None:
    """Warn, at the start of a ``record()`` or ``replay()``, about replays still active in the process."""
    with _lock:
        active = [_describe(guard) for guard in ACTIVE_REPLAYS]
    if active:
        warnings.warn(
            f"{starting} starts while {len(active)} replay(s) are still active: {'; '.join(active)}. "
            "A replay entered with __enter__() and never exited stays active and refuses every decorated call "
            "made outside its context; use `with replay(...)` (or call its __exit__) so it ends",
            ReplayWarning,
            stacklevel=4,
        )


def _warn_at_exit() -> None:
    with _lock:
        active = [_describe(guard) for guard in ACTIVE_REPLAYS]
    if active:
        warnings.warn(
            f"the process exits with {len(active)} replay(s) never exited: {'; '.join(active)}; "
            "use `with replay(...)` (or call its __exit__) so the replay ends and reports",
            ReplayWarning,
            stacklevel=1,
        )


def refuse_outside(spec: Any) -> None:
    """Ask each active replay about a call made outside every replay's context; raise its refusal."""
    with _lock:
        guards = tuple(ACTIVE_REPLAYS)
    refusal: BaseException | None = None
    for guard in guards:
        error = guard.outside_call(spec)
        if refusal is None:
            refusal = error
    if refusal is not None:
        raise refusal


ACTIVE_RECORDINGS: list[object] = []
"""The ``record()`` blocks active in the process."""
_warned_ambiguous = False


def recording_started(recording: object) -> None:
    with _lock:
        ACTIVE_RECORDINGS.append(recording)


def recording_ended(recording: object) -> None:
    with _lock:
        if recording in ACTIVE_RECORDINGS:
            ACTIVE_RECORDINGS.remove(recording)


def only_recording(agent_name: str) -> object | None:
    """The recording a run started outside every recording's context joins: the only one active, else None.

    With several active it cannot choose: warns once, with the fix.
    """
    global _warned_ambiguous
    with _lock:
        active = tuple(ACTIVE_RECORDINGS)
        if len(active) == 1:
            return active[0]
        if not active or _warned_ambiguous:
            return None
        _warned_ambiguous = True
    warnings.warn(
        f"agent_run({agent_name!r}) started in a thread or task that does not carry a record() context while "
        f"{len(active)} recordings are active, so it is not recorded (this warning is shown once). Start the "
        "thread with a copy of the context: ctx = contextvars.copy_context() inside the record() block, then "
        "threading.Thread(target=ctx.run, args=(fn, ...)) or executor.submit(ctx.run, fn, ...)",
        RecordingWarning,
        stacklevel=4,
    )
    return None
