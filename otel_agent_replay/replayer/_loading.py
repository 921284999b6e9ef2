"""The tape a replay starts from: loaded once per process, locked when the replay may write it, and
checked before anything is answered from it (its age, a strict replay's empty tape, where a fork goes)."""

from __future__ import annotations

import datetime as _dt
import os
import threading
from pathlib import Path

from otel_agent_replay.core import (
    RecordMode,
    TapeError,
    TapeLock,
    TapeNotFoundError,
    TapeStale,
    Writing,
    hold_tape,
    lock_path,
)
from otel_agent_replay.tape import Run, Tape, load_tape
from otel_agent_replay.timetravel import Edits, fork_tape_for

from ._options import ReplayOptions
from ._runs import select_runs

__all__ = ["check_age", "check_not_empty", "fork_tape", "load", "load_once", "recorded_at", "writer_lock"]

_LOADED: dict[str, tuple[tuple[int, int, int, int], Tape]] = {}
"""Tapes this process loaded to replay, by path, with the file's identity when it was read."""
_LOADED_LOCK = threading.Lock()
_MAX_LOADED = 256


def load_once(path: Path) -> Tape:
    """The tape at ``path``, parsed once per process while the file stays the same file with the same size
    and modification time (a replay never changes a loaded ``Tape``, and a step's ``args`` and ``result``
    are parsed anew at each use, so replays can share one). A rewrite, an append or a replaced file is
    read again; a tape that loaded with warnings is not kept, so each replay warns again."""
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except OSError:
        return load_tape(name)  # its own error (not found, not a regular file) says what is wrong
    identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    with _LOADED_LOCK:
        known = _LOADED.get(name)
    if known is not None and known[0] == identity:
        return known[1]
    tape = load_tape(name)
    if not tape.warnings:
        with _LOADED_LOCK:
            _LOADED.pop(name, None)
            if len(_LOADED) >= _MAX_LOADED:
                del _LOADED[next(iter(_LOADED))]  # the oldest
            _LOADED[name] = (identity, tape)
    return tape


def _writing(options: ReplayOptions) -> Writing:
    """What a replay that writes its tape does, in words for the lock's messages."""
    mode, hints = options.record_mode, options.hints
    longer = hints.option("lock_timeout=SECONDS")
    if mode == RecordMode.ONCE:
        advice = (
            f"When it has finished, run again: {hints.mode('once')} then replays the tape it recorded; or wait "
            f"longer with {longer}"
        )
    elif mode == RecordMode.NEW_EPISODES:
        advice = (
            f"Appends to one tape are made one after the other: wait longer with {longer}, or replay without "
            f"appending ({hints.mode('none')}), which waits for no one"
        )
    else:
        advice = f"Wait for it to end (or longer, with {longer}), or give each process a tape of its own"
    return Writing(f"this replay (mode={mode.value!r})", advice)


def writer_lock(path: Path | None, options: ReplayOptions) -> TapeLock | None:
    """The tape's one-writer lock for a mode that may write it, held to the block's end (None: this replay
    writes no tape). ``once`` takes it only while the tape is missing or being written, and a ``once`` that
    finds the tape written when it gets the lock (another process recorded it meanwhile) replays it."""
    mode = options.record_mode
    if path is None or mode == RecordMode.NONE:
        return None
    if mode == RecordMode.ONCE and path.exists() and not lock_path(path).exists():
        return None  # recorded, and nobody writes it: replayed as it is, with nothing written beside it
    lock = hold_tape(path, _writing(options), options.lock_timeout)
    if mode == RecordMode.ONCE and path.exists():
        lock.release()
        return None
    return lock


def recorded_at(run: Run) -> _dt.datetime | None:
    """When a run was recorded: its ``recorded_at``, else its first timestamp (None: neither is known)."""
    if run.recorded_at:
        try:
            when = _dt.datetime.fromisoformat(run.recorded_at)
            return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)
        except ValueError:
            pass
    first = run.start_ns or (run.steps[0].start_ns if run.steps else 0)
    return _dt.datetime.fromtimestamp(first / 1e9, _dt.timezone.utc) if first else None


def fork_tape(options: ReplayOptions, tape: Tape) -> Path | None:
    """Where a replay that may fork writes its run (None: it does not fork, or has nowhere to write)."""
    if not options.forks:
        return None
    Edits(options.edit).check(tape)
    if options.fork_tape is not None:
        return Path(options.fork_tape)
    return fork_tape_for(tape.path) if tape.path else None


def load(path: Path | None, options: ReplayOptions) -> Tape:
    """The tape to replay at ``path`` (``load_once``), its absence explained in terms of the replay's mode."""
    __tracebackhide__ = True  # pytest shows the user's frames, not ours
    assert path is not None
    try:
        return load_once(path)
    except TapeNotFoundError as exc:
        hints = options.hints
        raise TapeNotFoundError(
            f"{path}: no tape to replay (mode={options.record_mode.value!r}); record it first: "
            f"{hints.mode('once')} records it on the first run"
        ) from exc


def check_not_empty(tape: Tape, options: ReplayOptions) -> None:
    """A strict replay of a tape without a single step fails: an empty recording proves nothing."""
    __tracebackhide__ = True  # pytest shows the user's frames, not ours
    if options.record_mode != RecordMode.NONE or any(run.steps for run in tape.runs):
        return
    runs = len(tape.runs)
    held = f"{runs} run{'s' if runs != 1 else ''} and no step" if runs else "no run"
    raise TapeError(
        f"{tape.path}: the tape holds {held} (no @tool, @model_call or HTTP call was recorded), so a strict "
        "replay of it (mode='none') would pass whatever the agent does. Record it again with the agent's "
        f"calls decorated or going through a captured HTTP client: {options.hints.mode('all')} records it "
        f"afresh, {options.hints.mode('once')} records a tape that does not exist yet"
    )


def check_age(tape: Tape, options: ReplayOptions) -> None:
    """A run recorded longer ago than ``max_age=`` is stale: ``TapeStale``, naming the run and how to re-record."""
    __tracebackhide__ = True  # pytest shows the user's frames, not ours
    max_age = options.max_age_seconds
    if max_age is None:
        return
    now = _dt.datetime.now(_dt.timezone.utc)
    for run in select_runs(tape, options):
        when = recorded_at(run)
        if when is not None and (now - when).total_seconds() > max_age:
            raise TapeStale(
                f"{tape.path}: run {run.run_id} was recorded at {when.isoformat(timespec='seconds')}, "
                f"{(now - when).total_seconds() / 86400:.1f} days ago, older than max_age="
                f"{max_age:g}s; re-record it ({options.hints.mode('all')}) so the fixtures follow "
                "today's APIs"
            )
