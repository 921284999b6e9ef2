"""ReplayOptions: one frozen policy for many replays; ReplayStats: typed and readable as a mapping."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest

from otel_agent_replay import (
    ConfigurationError,
    RecordMode,
    Redactor,
    ReplayOptions,
    ReplayStats,
    SideEffectRefused,
    TapeUnused,
    agent_run,
    record,
    replay,
    tool,
)
from otel_agent_replay.replayer import API_HINTS

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


# One value of each field as a user would give it, not yet normalised (a str where a member is kept, a list
# where a tuple is, a timedelta where seconds are).
_GIVEN: dict[str, object] = {
    "run_id": "r1",
    "trace_id": "t1",
    "mode": "once",
    "side_effects": "stub",
    "stub": "send",
    "fallbacks": {"fetch": str.upper},
    "overrides": {("fetch", 2): "X"},
    "max_age": dt.timedelta(hours=1),
    "allow_unused": True,
    "models": "live",
    "spans": False,
    "declare": {"fetch": "read_only"},
    "stale_versions": "error",
    "redactor": Redactor(keys=("pin",)),
    "on_miss": "error_result",
    "on_drift": "count",
    "hints": API_HINTS,
    "outside_calls": "read_only",
    "pace": "recorded",
    "network": "allow",
    "key_ignore": {"fetch": "id"},
    "allow_hosts": ["db.internal"],
    "allow_sockets": [Path("/run/pg.sock")],
    "http": False,
    "http_models": False,
    "http_routes": [],
    "http_side_effects": {"GET api.example.com/*": "external"},
    "mcp_side_effects": {"crm/*": "write"},
    "passthrough": ["Example.COM"],
    "then": "live",
    "edit": {"fetch#1": "Y"},
    "fork_tape": "f.jsonl",
    "lock_timeout": 5,
}


def test_replace_normalises_each_field_it_changes_as_the_constructor_does() -> None:
    """``replace`` checks and normalises only the fields it changes: for every field, the copy equals the
    options built with that field, and the other fields stay the original's."""
    assert set(_GIVEN) == {f.name for f in dataclasses.fields(ReplayOptions)}  # a new field is listed here
    base = ReplayOptions(stub=("keep",), max_age=60)
    for name, value in _GIVEN.items():
        replaced = base.replace(**{name: value})
        built = ReplayOptions(**{"stub": ("keep",), "max_age": 60, name: value})  # type: ignore[arg-type]
        assert getattr(replaced, name) == getattr(built, name), name
        assert type(getattr(replaced, name)) is type(getattr(built, name)), name
        for other in _GIVEN:
            if other != name:
                assert getattr(replaced, other) == getattr(base, other), (name, other)
    assert base.replace() is base and base.stubbed == frozenset({"keep"})
    with pytest.raises(TypeError, match="model"):
        base.replace(model="live")
    with pytest.raises(ConfigurationError, match="allow_hosts"):
        base.replace(allow_hosts=[""])


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
