"""ReplayOptions: one frozen policy for many replays; ReplayStats: typed and readable as a mapping."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from otel_agent_replay import (
    ConfigurationError,
    RecordMode,
    ReplayOptions,
    ReplayStats,
    SideEffectRefused,
    TapeUnused,
    agent_run,
    record,
    replay,
    tool,
)

CALLS: list[str] = []


@tool(side_effect="read_only")
def fetch(key: str) -> str:
    CALLS.append(key)
    return key.upper()


@tool(side_effect="write")
def send(text: str) -> int:
    CALLS.append("send")
    return len(text)


def agent(keys: list[str]) -> None:
    with agent_run("opts"):
        for key in keys:
            fetch(key)
        send("done")


@pytest.fixture
def recorded(tape: Path) -> Path:
    with record(tape):
        agent(["a", "b"])
    CALLS.clear()
    return tape


def test_options_are_frozen_normalised_and_shared(recorded: Path) -> None:
    suite = ReplayOptions(stub="send", max_age=dt.timedelta(days=30), mode="none")
    assert suite.mode is RecordMode.NONE and suite.stubbed == frozenset({"send"}) and suite.max_age == 30 * 86400
    with pytest.raises(dataclasses.FrozenInstanceError):
        suite.mode = RecordMode.ALL  # type: ignore[misc]
    with replay(recorded, suite) as r:
        agent(["a", "b"])
    assert CALLS == [] and r.stats["tape_hits"] == 3 and r.stats["stubbed_side_effects"] == 1


def test_a_keyword_wins_over_the_options(recorded: Path) -> None:
    suite = ReplayOptions(stub=("send",))
    with replay(recorded, suite, allow_unused=True) as r:
        agent(["a"])
    assert r.stats["unused_entries"] == 1
    with pytest.raises(TapeUnused), replay(recorded, suite):
        agent(["a"])
    with pytest.raises(SideEffectRefused), replay(recorded, suite, stub=()):
        agent(["a", "b"])
    assert CALLS == []


def test_replace_checks_like_the_constructor() -> None:
    with pytest.raises(ConfigurationError, match="replay\\(mode='later'\\)"):
        ReplayOptions().replace(mode="later")
    with pytest.raises(ConfigurationError, match="give a ReplayOptions"):
        replay("t.jsonl", {"mode": "none"})  # type: ignore[arg-type]


def test_stats_are_typed_and_a_mapping_under_the_documented_keys(recorded: Path) -> None:
    with replay(recorded, stub=("send",)) as r:
        agent(["a", "b"])
    stats = r.stats
    assert isinstance(stats, ReplayStats)
    assert (stats.hits, stats.misses, stats.drifts, stats.unused) == (3, 0, 0, 0)
    assert stats["tape_hits"] == stats.hits and stats["drift_events"] == stats.drifts
    assert stats["mode"] == "none" and dict(stats)["live_tool_calls"] == 0
    assert list(stats)[:3] == ["mode", "steps", "tape_hits"] and len(stats) == len(dict(stats))
    with pytest.raises(KeyError):
        stats["tape_hit"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.hits = 0  # type: ignore[misc]
