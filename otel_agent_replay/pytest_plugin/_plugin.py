"""The pytest plugin: each test records or replays its own tape.

Options: ``--agent-record-mode`` (none, once, new_episodes, all; default none) and
``--agent-tapes-dir``. The ``agent_tape`` fixture (configured by the marker
``@pytest.mark.agent_tape(path=None, **replay_options)``) replays the test's tape and
yields the replay handle; after the test body it fails the test on live calls in mode
none, real side effects, drift and unused recorded steps (each can be switched off with
the marker's ``fail_on_*`` options). The tape of a test is by default
``tapes/<test module>/[<class>/]<test name>.jsonl`` beside the test module; its name is
derived from the test id and sanitised, and it must resolve inside the tapes folder (a
symlinked folder cannot take it elsewhere). One tape per test means no shared writers under
pytest-xdist; a test that records a tape another process is recording fails with a clear
error (a lock file in the temporary folder). A relative ``agent_tapes_dir`` in the ini file
is relative to the ini file's folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import tempfile
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from otel_agent_replay.core import ConfigurationError, RecordMode, TapeStale
from otel_agent_replay.replayer import ReplaySession, replay

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_DOTS = re.compile(r"\.{2,}")
_MAX_NAME = 120
_STATE = pytest.StashKey["_TapeState"]()


@dataclass
class _TapeState:
    context: replay
    session: ReplaySession
    checks: dict[str, bool]
    finished: bool = False
    lock: IO[str] | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent-replay", "otel-agent-replay: record and replay agent runs")
    group.addoption(
        "--agent-record-mode",
        choices=[mode.value for mode in RecordMode],
        default=None,
        help="none (strict replay, the default), once (record missing tapes), new_episodes (append "
        "read-only misses), all (record every tape again)",
    )
    group.addoption(
        "--agent-tapes-dir",
        default=None,
        help="folder for tapes (default: a 'tapes' folder beside each test module)",
    )
    parser.addini("agent_record_mode", "default for --agent-record-mode", default="none")
    parser.addini("agent_tapes_dir", "default for --agent-tapes-dir", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_tape(path=None, **options): the test's tape (relative to its tapes folder) and replay() "
        "options such as stub=, allow_unused=, overrides=, fallbacks=; fail_on_live_calls=, "
        "fail_on_side_effects=, fail_on_drift=, fail_on_unused= switch the end-of-test checks",
    )


def safe_name(text: str) -> str:
    """A file name from a test name: unsafe characters replaced, long names cut and hashed."""
    name = _DOTS.sub("_", _UNSAFE.sub("_", text)).strip("._") or "test"
    if name != text or len(name) > _MAX_NAME:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
        name = f"{name[:_MAX_NAME]}-{digest}"
    return name


def _tapes_root(item: pytest.Item, module: Path) -> Path:
    """The tapes folder: the option (relative to the working folder), the ini value (relative to the ini
    file's folder), else ``tapes`` beside the test module."""
    config = item.config
    option = config.getoption("agent_tapes_dir")
    if option:
        return Path(option)
    ini = config.getini("agent_tapes_dir")
    if ini:
        path = Path(ini)
        return path if path.is_absolute() or config.inipath is None else config.inipath.parent / path
    return module.parent / "tapes"


def tape_path_for(item: pytest.Item, given: str | None) -> Path:
    """Where a test's tape lives; it must stay inside the tapes folder (a symlinked folder included).

    By default ``<tapes>/<module>/<Class>/<test>.jsonl``: the class (for tests in classes) keeps
    ``TestA::test_same`` and ``TestB::test_same`` apart.
    """
    module = Path(str(item.path))
    root = _tapes_root(item, module)
    folder = root / safe_name(module.stem)
    if given is None:
        classes = item.nodeid.split("::")[1:-1]
        target = folder.joinpath(*(safe_name(c) for c in classes), f"{safe_name(item.name)}.jsonl")
        where = "its default tape path"
    else:
        target = folder / given
        where = f"@pytest.mark.agent_tape({given!r})"
    if not target.resolve().is_relative_to(root.resolve()):
        raise ConfigurationError(
            f"{item.nodeid}: {where} points outside the tapes folder {root} (resolved: {target.resolve()}; a "
            "symlinked folder?); give a path relative to it, or remove the link"
        )
    return target.resolve() if given is not None else target


def _lock_tape(path: Path, nodeid: str, *, exclusive: bool) -> IO[str] | None:
    """Lock the tape for this test: exclusive to record it, shared to replay it (a lock file in the
    temporary folder, named by the tape's path). Another process recording it is a clear error."""
    key = hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / "otel-agent-replay-locks"
    try:
        folder.mkdir(exist_ok=True)
        handle = (folder / f"{key}.lock").open("a+")
    except OSError:
        return None  # no lock folder we may write (another user's): the tape is used unlocked
    try:
        fcntl.flock(handle, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        doing = "record" if exclusive else "replay"
        raise ConfigurationError(
            f"{nodeid}: cannot {doing} the tape {path}: it is in use by {holder}, and one of you is recording "
            "it. Two tests (or two pytest-xdist workers) must not record one tape at once: give each test its "
            "own tape (the default path), or keep them in one worker (pytest-xdist's --dist loadfile)"
        ) from None
    if exclusive:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{nodeid} (pid {os.getpid()})")
        handle.flush()
    return handle


_CHECKS = ("fail_on_live_calls", "fail_on_side_effects", "fail_on_drift", "fail_on_unused")


@pytest.fixture
def agent_tape(request: pytest.FixtureRequest) -> Iterator[ReplaySession]:
    """Record or replay this test's tape (see ``--agent-record-mode``); yields the replay handle."""
    marker = request.node.get_closest_marker("agent_tape")
    options: dict[str, Any] = dict(marker.kwargs) if marker else {}
    given = options.pop("path", None)
    if marker and marker.args:
        given = marker.args[0]
    checks = {name: bool(options.pop(name, True)) for name in _CHECKS}
    if not checks["fail_on_unused"]:
        options.setdefault("allow_unused", True)
    config = request.config
    mode = options.pop("mode", None) or config.getoption("agent_record_mode") or config.getini("agent_record_mode")
    path = tape_path_for(request.node, given)
    context = replay(path, mode=mode, **options)
    writes = context.options.records(path.exists()) or context.options.record_mode == RecordMode.NEW_EPISODES
    lock = _lock_tape(path, request.node.nodeid, exclusive=writes)
    try:
        session = context.__enter__()
    except TapeStale as exc:
        _unlock(lock)
        pytest.fail(f"stale tape: {exc}", pytrace=False)
    except BaseException:
        _unlock(lock)
        raise
    state = _TapeState(context, session, checks, lock=lock)
    request.node.stash[_STATE] = state
    try:
        yield session
    finally:
        if not state.finished:  # the test body never ran (a setup error elsewhere)
            state.finished = True
            _close_quietly(state)


def _unlock(lock: IO[str] | None) -> None:
    if lock is not None:
        lock.close()  # closing the file releases its flock


def _close_quietly(state: _TapeState) -> None:
    try:
        with contextlib.suppress(Exception):  # the test already failed; its own error is what to show
            state.context.__exit__(RuntimeError, RuntimeError("the test failed"), None)
    finally:
        _unlock(state.lock)


def _finish(state: _TapeState, failed: bool) -> None:
    """End the replay after the test body; raise AssertionError on what the checks forbid."""
    __tracebackhide__ = True
    state.finished = True
    if failed:
        _close_quietly(state)
        return
    try:
        state.context.__exit__(None, None, None)  # raises on drift, misses, unused (strict)
    finally:
        _unlock(state.lock)
    session, checks = state.session, state.checks
    if session.recording:
        return
    stats = session.stats
    problems = []
    if checks["fail_on_live_calls"] and session.mode == RecordMode.NONE and stats["live_tool_calls"]:
        problems.append(f"{stats['live_tool_calls']} live tool call(s) in mode none")
    if checks["fail_on_side_effects"] and stats["real_side_effects"]:
        problems.append(f"{stats['real_side_effects']} real side effect(s)")
    if checks["fail_on_drift"] and stats["drift_events"]:
        problems.append(f"{stats['drift_events']} drift event(s)")
    if checks["fail_on_unused"] and stats["unused_entries"]:
        problems.append(f"{stats['unused_entries']} unused recorded step(s)")
    if problems:
        details = "\n".join(f"  [{d.kind}] {d.message.splitlines()[0]}" for d in session.report)
        raise AssertionError(f"agent tape {session.tape_path}: " + "; ".join(problems) + ("\n" + details))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    __tracebackhide__ = True
    try:
        result = yield
    except BaseException:
        state = item.stash.get(_STATE, None)
        if state is not None and not state.finished:
            _finish(state, failed=True)
        raise
    state = item.stash.get(_STATE, None)
    if state is not None and not state.finished:
        _finish(state, failed=False)
    return result
