"""The pytest plugin: each test records or replays its own tape.

Options: ``--agent-record-mode`` (none, once, new_episodes, all; default none) and
``--agent-tapes-dir`` (default: ``tapes_dir`` under ``[tool.otel-agent-replay]`` in pyproject.toml).
The ``agent_tape`` fixture (configured by the marker
``@pytest.mark.agent_tape(path=None, **replay_options)``) replays the test's tape (strictly by
default, so with the network guard on) and yields the replay handle; after the test body it
fails the test on live calls in mode none, real side effects, drift and unused recorded steps
(each can be switched off with the marker's ``fail_on_*`` options). The tape of a test is by default
``tapes/<test module>/<test name>.jsonl`` beside the test module; its name is derived
from the test id and sanitised, so it stays inside its folder. One tape per test means
no shared writers under pytest-xdist.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay.core import ConfigurationError, RecordMode, TapeStale, project_settings
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


def tape_path_for(item: pytest.Item, given: str | None) -> Path:
    """Where a test's tape lives; a path given by the marker must stay inside the tapes folder."""
    module = Path(str(item.path))
    configured = item.config.getoption("agent_tapes_dir") or item.config.getini("agent_tapes_dir")
    if not configured:
        configured = project_settings(Path(str(item.config.rootpath))).tapes_dir
    root = Path(configured) if configured else module.parent / "tapes"
    folder = root / safe_name(module.stem)
    if given is None:
        return folder / f"{safe_name(item.name)}.jsonl"
    target = (folder / given).resolve()
    if not target.is_relative_to(root.resolve()):
        raise ConfigurationError(
            f"{item.nodeid}: @pytest.mark.agent_tape({given!r}) points outside the tapes folder {root}; "
            "give a path relative to it"
        )
    return target


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
    try:
        session = context.__enter__()
    except TapeStale as exc:
        pytest.fail(f"stale tape: {exc}", pytrace=False)
    state = _TapeState(context, session, checks)
    request.node.stash[_STATE] = state
    try:
        yield session
    finally:
        if not state.finished:  # the test body never ran (a setup error elsewhere)
            state.finished = True
            _close_quietly(state)


def _close_quietly(state: _TapeState) -> None:
    with contextlib.suppress(Exception):  # the test already failed; its own error is what to show
        state.context.__exit__(RuntimeError, RuntimeError("the test failed"), None)


def _finish(state: _TapeState, failed: bool) -> None:
    """End the replay after the test body; raise AssertionError on what the checks forbid."""
    __tracebackhide__ = True
    state.finished = True
    if failed:
        _close_quietly(state)
        return
    state.context.__exit__(None, None, None)  # raises on drift, misses, unused (strict)
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
