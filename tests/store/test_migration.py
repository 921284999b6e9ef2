"""Schema migration 2 (agent_session.case_id, repetition) keeps a store of schema 1 readable."""

from __future__ import annotations

import orjson
from helpers.store_sql import raw

from otel_agent_replay.store import LATEST_VERSION, open_store, report_rows
from otel_agent_replay.store._schema import MIGRATIONS, _spell


def _schema_one(location: str) -> None:
    """A store as otel-agent-replay left it before migration 2, with a recording and one replay of it."""
    dialect = "postgresql" if location.startswith("postgresql://") else "sqlite"
    mark = "%s" if dialect == "postgresql" else "?"
    (version, description, statements) = MIGRATIONS[0]
    raw(location, _spell("CREATE TABLE schema_version (version {int} PRIMARY KEY, applied_at {int} NOT NULL, "
                         "description {text} NOT NULL)", dialect))  # fmt: skip
    for statement in statements:
        raw(location, _spell(statement, dialect))
    raw(location, f"INSERT INTO schema_version VALUES ({mark}, 0, {mark})", (version, description))
    insert = (
        "INSERT INTO agent_session (session_id, trace_id, agent_name, agent_version, input, started_at, finished_at, "
        f"status, tags, extra) VALUES ({', '.join([mark] * 10)})"
    )
    raw(location, insert, ("rec-1", "t1", "shop", "v1", '{"q":1}', 1, 2, "success", "[]", "{}"))
    extra = orjson.dumps({"mode": "replay", "replay_of": "rec-1"}).decode()
    raw(location, insert, ("new-1", "t2", "shop", "v2", '{"q":1}', 3, 4, "success", "[]", extra))


def test_a_store_of_schema_one_is_migrated_and_its_replays_become_cases(store_location: str) -> None:
    _schema_one(store_location)
    with open_store(store_location) as store:
        assert store.schema_version == LATEST_VERSION == 2
        recorded, replayed = store.session("rec-1"), store.session("new-1")
        assert (recorded.case_id, recorded.repetition) == (None, None), "a recording is no run of a case"
        assert (replayed.case_id, replayed.repetition) == ("rec-1", 1), "an earlier replay: its case, run 1"
        report = report_rows(store, cases=True, compare=("v1", "v2"))
    assert [r.group for r in report.rows] == ["v1", "v2"]
    assert report.cases is not None
    (case,) = report.cases.comparisons
    assert case.case_id == "rec-1" and case.candidate.runs == 1 and case.baseline.runs == 0
    assert case.verdict == "unknown"
