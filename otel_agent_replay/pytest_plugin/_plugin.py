"""The pytest plugin: each test records or replays its own tape.

Options: ``--agent-record-mode`` (none, once, new_episodes, all; default none) and
``--agent-tapes-dir`` (default: ``tapes_dir`` under ``[tool.otel-agent-replay]`` in pyproject.toml).
The ``agent_tape`` fixture (configured by the marker
``@pytest.mark.agent_tape(path=None, **replay_options)``) replays the test's tape (strictly by
default, so with the network guard on) and yields the replay handle; after the test body it
fails the test on live calls in mode none, real side effects, drift and unused recorded steps
(each can be switched off with the marker's ``fail_on_*`` options). The tape of a test is by default
``tapes/<test module>/[<class>/]<test name>.jsonl`` beside the test module; its name is
derived from the test id and sanitised, and it must resolve inside the tapes folder (a
symlinked folder cannot take it elsewhere). One tape per test means no shared writers under
pytest-xdist; a test that records a tape another process is recording fails with a clear
error (a lock file in the temporary folder). A relative ``agent_tapes_dir`` in the ini file
is relative to the ini file's folder.

This module is the plugin's body, imported by the entry point (``_hooks``) only when a test uses
the fixture or the ``agent_conform`` marker.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay.core import (
    ConfigurationError,
    RecordMode,
    TapeNotFoundError,
    TapeStale,
)
from otel_agent_replay.replayer import Hints, ReplaySession, conform, load_tools, replay

from ._outcome import divergence_in, expectation_met, expected_errors, unmet
from ._state import NOT_READY as _NOT_READY
from ._state import STATE as _STATE
from ._state import TapeState
from ._tapes import lock_tape, tape_path_for, tape_paths, unlock


@dataclass(frozen=True)
class PytestHints(Hints):
    """Hints in pytest's words: the plugin's option, the marker, and the test to run again."""

    nodeid: str

    def mode(self, mode: str) -> str:
        return f"pytest {shlex.quote(self.nodeid)} --agent-record-mode={mode}"

    def option(self, text: str) -> str:
        return f"@pytest.mark.agent_tape({text})"


def runnable_id(item: pytest.Item) -> str:
    """The test's id as typed where pytest was started (a node id is relative to the rootdir)."""
    where = os.path.relpath(Path(str(item.path)), item.config.invocation_params.dir)
    _, sep, rest = item.nodeid.partition("::")
    return f"{where}{sep}{rest}"


def _conform(item: pytest.Item) -> None:
    """``@pytest.mark.agent_conform(tools, tapes=None)``: each read-only tool on the tapes (default:
    every tape of this test module) is called once, live; the test fails when one answers in
    another shape than its fixtures."""
    __tracebackhide__ = True
    marker = item.get_closest_marker("agent_conform")
    if marker is None:
        return
    tools = marker.args[0] if marker.args else marker.kwargs.get("tools")
    if tools is None:
        raise ConfigurationError(f"{item.nodeid}: @pytest.mark.agent_conform needs tools= (a module, list or mapping)")
    if isinstance(tools, str):
        tools = load_tools(tools)
    given = marker.kwargs.get("tapes")
    folder = tape_path_for(item, None).parent
    if given is None:
        tapes = sorted(folder.glob("*.jsonl"))
    else:
        tapes = [tape_path_for(item, name) for name in ((given,) if isinstance(given, str) else given)]
    if not tapes:
        pytest.fail(f"agent_conform: no tapes in {folder}; record them first, or name them with tapes=", False)
    result = conform(tapes, tools)
    if not result.ok:
        pytest.fail(f"the live tools no longer answer like the fixtures on {len(tapes)} tape(s):\n{result}", False)


_CHECKS = ("fail_on_live_calls", "fail_on_side_effects", "fail_on_drift", "fail_on_unused")
_REPEATING: dict[str, Any] = {"models": "live", "on_drift": "count", "on_miss": "error_result", "side_effects": "stub"}
"""The replay options of ``repeat=`` (each one the marker may set otherwise)."""


def _repetitions(item: pytest.Item) -> tuple[int, float] | None:
    """``repeat=`` and ``min_pass_rate=`` of the test's marker, checked; None when it asks for one run."""
    marker = item.get_closest_marker("agent_tape")
    if marker is None or ("repeat" not in marker.kwargs and "min_pass_rate" not in marker.kwargs):
        return None
    repeat, rate = marker.kwargs.get("repeat", 1), marker.kwargs.get("min_pass_rate", 1.0)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConfigurationError(f"{item.nodeid}: @pytest.mark.agent_tape(repeat={repeat!r}): give a whole number >= 1")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ConfigurationError(
            f"{item.nodeid}: @pytest.mark.agent_tape(min_pass_rate={rate!r}): give a share from 0 to 1, e.g. 0.8"
        )
    return (repeat, float(rate)) if repeat > 1 else None


def _open(
    item: pytest.Item,
    options: dict[str, Any],
    checks: dict[str, bool],
    given: str | None,
    paths: tuple[Path, Path] | None = None,
    hints: PytestHints | None = None,
) -> TapeState:
    """Open the test's replay (or recording) with the marker's options; a tape it cannot start raises.
    ``paths``: the test's tape path and its resolved form, ``hints`` the test's, when the caller has them."""
    config = item.config
    options = dict(options)
    mode = options.pop("mode", None) or config.getoption("agent_record_mode") or config.getini("agent_record_mode")
    path, resolved = paths or tape_paths(item, given)
    hints = options.pop("hints", None) or hints or PytestHints(runnable_id(item))  # the marker's hints= first
    context = replay(path, hints=hints, mode=mode, **options)
    writes = context.options.records(path.exists()) or context.options.record_mode == RecordMode.NEW_EPISODES
    lock = lock_tape(path, item.nodeid, exclusive=writes, resolved=resolved)
    try:
        session = context.__enter__()
    except BaseException:
        unlock(lock)
        raise
    return TapeState(context, session, checks, lock=lock, options=options, given=given)


def tape_fixture(request: pytest.FixtureRequest) -> Iterator[ReplaySession]:
    """The ``agent_tape`` fixture's body: record or replay this test's tape; yields the replay handle."""
    marker = request.node.get_closest_marker("agent_tape")
    options: dict[str, Any] = dict(marker.kwargs) if marker else {}
    given = options.pop("path", None)
    if marker and marker.args:
        given = marker.args[0]
    repeating = (options.pop("repeat", 1) or 1) != 1
    if repeating:
        # repetitions are judged on outcomes: the model runs again, a tool's changed arguments are answered
        # and counted (never run), unused steps allowed; the test's assertions give the pass or fail
        for name, value in (("fail_on_drift", False), ("fail_on_unused", False)):
            options.setdefault(name, value)
        for name, value in _REPEATING.items():
            options.setdefault(name, value)
    checks = {name: bool(options.pop(name, True)) for name in _CHECKS}
    if not checks["fail_on_unused"]:
        options.setdefault("allow_unused", True)
    options.pop("min_pass_rate", None)
    options.pop("expect", None)
    config = request.config
    mode = options.get("mode") or config.getoption("agent_record_mode") or config.getini("agent_record_mode")
    paths = tape_paths(request.node, given)
    path = paths[0]
    hints = PytestHints(runnable_id(request.node))
    try:
        state = _open(request.node, options, checks, given, paths, hints)
    except TapeNotFoundError:
        request.node.stash[_NOT_READY] = (
            f"no tape for this test at {path} (mode {mode!r}). Record it once, live: {hints.mode('once')}"
        )
        yield None  # type: ignore[misc]  # pytest_runtest_call fails the test before its body runs
        return
    except TapeStale as exc:
        request.node.stash[_NOT_READY] = f"stale tape: {exc}"
        yield None  # type: ignore[misc]
        return
    request.node.stash[_STATE] = state
    try:
        yield state.session
    finally:
        # The item outlives its test (pytest keeps every item to the session's end): it drops the replay,
        # so a suite does not keep each test's session, options, index and lock file for the garbage
        # collector to walk at every full collection.
        del request.node.stash[_STATE]
        if not state.finished:  # the test body never ran (a setup error elsewhere)
            state.finished = True
            _close_quietly(state)


def _close_quietly(state: TapeState) -> None:
    try:
        with contextlib.suppress(Exception):  # the test already failed; its own error is what to show
            state.context.__exit__(RuntimeError, RuntimeError("the test failed"), None)
    finally:
        unlock(state.lock)


def _finish(state: TapeState, failed: bool) -> None:
    """End the replay after the test body; raise AssertionError on what the checks forbid."""
    __tracebackhide__ = True
    state.finished = True
    if failed:
        _close_quietly(state)
        return
    try:
        state.context.__exit__(None, None, None)  # raises on drift, misses, unused (strict)
    finally:
        unlock(state.lock)
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def _repeating(item: pytest.Item, body: Callable[..., object], repeat: int, min_rate: float) -> Callable[..., None]:
    """The test body run ``repeat`` times, each in a fresh replay of the tape; fails below ``min_rate``."""

    def run(**kwargs: Any) -> None:
        __tracebackhide__ = True
        failed: list[tuple[int, BaseException]] = []
        first = item.stash[_STATE]
        for repetition in range(1, repeat + 1):
            state = first if repetition == 1 else _open(item, first.options, first.checks, first.given)
            item.stash[_STATE] = state
            if "agent_tape" in kwargs:
                kwargs["agent_tape"] = state.session
            try:
                body(**kwargs)
            except (Exception, pytest.fail.Exception) as exc:
                _finish(state, failed=True)
                failed.append((repetition, exc))
                continue
            try:
                _finish(state, failed=False)
            except AssertionError as exc:
                failed.append((repetition, exc))
        passes = repeat - len(failed)
        rate = passes / repeat
        item.user_properties.append(("agent_tape_pass_rate", f"{passes}/{repeat}"))
        if rate + 1e-9 < min_rate:
            lines = "\n".join(f"  repetition {n}: {_first_line(exc)}" for n, exc in failed)
            raise AssertionError(
                f"pass rate {passes}/{repeat} = {rate:.0%} < {min_rate:.0%} (min_pass_rate); "
                f"failed repetitions: {', '.join(str(n) for n, _ in failed)}\n{lines}"
            )

    return run


def around_call(item: pytest.Item) -> Generator[None, object, object]:
    """Around the body of a test that uses the fixture or the ``agent_conform`` marker (the entry
    point's ``pytest_runtest_call`` delegates here): end the replay right after the body, then check
    conformance. With ``repeat=`` the body runs that many times, each repetition in a fresh replay.

    A failure names the replay's divergence first, whatever the agent's SDK wrapped it in (an
    ``APIConnectionError`` whose cause it is, exception groups of anyio task groups); a refusal or a
    divergence the marker's ``expect=`` names passes the test, and its absence fails it."""
    __tracebackhide__ = True
    expected = expected_errors(item)
    repetitions = _repetitions(item)
    state = item.stash.get(_STATE, None)
    original = getattr(item, "obj", None)
    repeating = repetitions is not None and state is not None and not state.session.recording and original is not None
    if repeating:
        assert repetitions is not None and original is not None
        item.obj = _repeating(item, original, *repetitions)  # type: ignore[attr-defined]
    try:
        result = yield
    except BaseException as exc:
        state = item.stash.get(_STATE, None)
        raised = list(state.session.ledger.raised) if state is not None else []
        if state is not None and not state.finished:
            _finish(state, failed=True)
        if repeating:
            raise  # the pass rate is the headline, with each failed repetition's first line under it
        found = divergence_in(exc) or (raised[0] if raised and isinstance(exc, Exception) else None)
        if expectation_met(expected, found or exc):
            return None
        if found is not None and found is not exc:
            raise found from exc  # the headline is the divergence, not what an SDK made of it
        raise
    finally:
        if repeating:
            item.obj = original  # type: ignore[attr-defined]
    state = item.stash.get(_STATE, None)
    if state is not None and not state.finished:
        try:
            _finish(state, failed=False)
        except BaseException as exc:
            if not expectation_met(expected, exc):
                raise
        else:
            if expected and not state.session.recording:
                raise unmet(item, expected)
    _conform(item)
    return result
