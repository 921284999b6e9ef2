"""A fork's session in the evidence store carries its lineage (``extra.forked_from``: the recording's
tape, the run and step it forked from, the edits), and a stored fork written back as a tape is still a
fork. The edited-weather fork (openai SDK, fake provider), stored in SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import weather_fork
from helpers.model_server import FakeProvider
from helpers.weather_fork import RAINY, fork_weather, record_weather

from otel_agent_replay import load_tape, open_store
from otel_agent_replay.tape import lineage


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with weather_fork.weather_world(tmp_path, monkeypatch) as fp:
        yield fp


def test_a_fork_session_says_what_it_was_forked_from(store_location: str, tmp_path: Path, world: FakeProvider) -> None:
    tape = record_weather(tmp_path / "weather.jsonl", world)
    fork_tape = fork_weather(tape, world, {"get_weather#1": RAINY})
    (recorded,) = load_tape(tape).runs
    (forked,) = load_tape(fork_tape).runs
    with open_store(store_location) as store:
        store.ingest(tape)
        store.ingest(fork_tape)
        assert "forked_from" not in store.session(recorded.run_id).extra
        session = store.session(forked.run_id)
        assert session.extra["forked_from"] == {
            "tape": str(tape),
            "run_id": recorded.run_id,
            "step_id": "get_weather#1",
            "edits": {"get_weather#1": RAINY},
            "diverged_at": "openai.chat.completions#2",
        }
        written = tmp_path / "written.jsonl"
        written.write_text("".join(line + "\n" for line in store.span_lines(forked.run_id)), encoding="utf-8")
    (again,) = load_tape(written).runs
    assert lineage(again) == lineage(forked)
