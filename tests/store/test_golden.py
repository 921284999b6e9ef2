"""Golden sets: sessions sampled per tag (failure, edge, success), written as tapes that replay strictly."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from helpers.store_agents import AGENT, BillingError, record_support, support_agent

from otel_agent_replay import ConfigurationError, agent_run, load_tape, replay
from otel_agent_replay.store import Store, golden, open_store

SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+\.jsonl")


def billing_history(store: Store, tmp_path: Path) -> dict[str, str]:
    """Sessions tagged billing: three successes, one of them twice, a failure and an edge case."""
    store.ingest(record_support(tmp_path / "ok.jsonl", "1.0", ["c1", "c2", "c3"]), tags=["billing"])
    store.ingest(record_support(tmp_path / "again.jsonl", "1.0", ["c1"]), tags=["billing"])
    store.ingest(record_support(tmp_path / "bad.jsonl", "1.0", ["bad1"]), tags=["billing"])
    store.ingest(record_support(tmp_path / "edge.jsonl", "1.1", ["c4"]), tags=["billing"])
    store.ingest(record_support(tmp_path / "other.jsonl", "1.0", ["c9"]), tags=["other"])
    cut = tmp_path / "cut.jsonl"  # an aborted session: not replayable, never golden
    lines = record_support(tmp_path / "full.jsonl", "1.0", ["c5"]).read_text(encoding="utf-8").splitlines(True)
    cut.write_text("".join(line for line in lines if '"invoke_agent"' not in line), encoding="utf-8")
    store.ingest(cut, tags=["billing"])
    return {s.input or "": s.session_id for s in store.sessions(tag="billing")}


def test_golden_covers_failure_edge_and_success_and_stays_in_out_dir(store_location: str, tmp_path: Path) -> None:
    out = tmp_path / "tapes" / "golden"
    with open_store(store_location) as store:
        billing_history(store, tmp_path)
        three = golden(store, tag="billing", per_tag=3, out_dir=out)
        everything = golden(store, tag=["billing", "other"], per_tag=10, out_dir=out)
        store.tag(store.sessions(tag="other")[0].session_id, "../../etc/pass wd")
        nasty = golden(store, tag="../../etc/pass wd", per_tag=1, out_dir=out)
        with pytest.raises(ConfigurationError, match=r"no finished sessions tagged 'nope'.*tags there: "):
            golden(store, tag="nope", per_tag=1, out_dir=out)
        with pytest.raises(ConfigurationError, match="per_tag must be"):
            golden(store, tag="billing", per_tag=0, out_dir=out)
    assert [(t.stratum, t.agent_version) for t in three] == [("failure", "1.0"), ("edge", "1.1"), ("success", "1.0")]
    billing = [t for t in everything if t.tag == "billing"]
    inputs = [load_tape(t.path).runs[0].input for t in billing]
    assert len(billing) == 5 and len({repr(i) for i in inputs}) == 5  # c1 once, c5 (aborted) never
    assert [t.stratum for t in everything if t.tag == "other"] == ["success"]
    for tape in [*everything, *nasty]:
        assert tape.path.parent == out.resolve() and SAFE_NAME.fullmatch(tape.path.name), tape.path
    assert nasty[0].path.name.startswith("etc-pass-wd--support-bot--")


def test_golden_tapes_load_like_the_recording_and_replay_strictly(store_location: str, tmp_path: Path) -> None:
    out = tmp_path / "golden"
    with open_store(store_location) as store:
        ids = billing_history(store, tmp_path)
        tapes = {t.session_id: t for t in golden(store, tag="billing", per_tag=10, out_dir=out)}
    originals = {run.run_id: run for name in ("ok", "bad", "edge") for run in load_tape(tmp_path / f"{name}.jsonl")}
    for session_id, tape in tapes.items():
        (run,) = load_tape(tape.path).runs
        recorded = originals.get(session_id) or load_tape(tmp_path / "again.jsonl").runs[0]
        assert run.run_id == recorded.run_id == session_id and run.complete
        assert (run.agent_name, run.agent_version, run.input_json) == (
            recorded.agent_name,
            recorded.agent_version,
            recorded.input_json,
        )
        assert [(s.seq, s.step_id, s.call_key, s.args_json, s.result_json, s.error) for s in run.steps] == [
            (s.seq, s.step_id, s.call_key, s.args_json, s.result_json, s.error) for s in recorded.steps
        ]
    success = tapes[ids['{"customer_id":"c2"}']]
    with replay(success.path) as session, agent_run(AGENT, agent_version="1.0", input={"customer_id": "c2"}):
        assert support_agent("c2", "1.0") == "You owe 42."
    assert session.stats["tape_hits"] == 3 and session.stats["tape_misses"] == 0
    edge = tapes[ids['{"customer_id":"c4"}']]
    with replay(edge.path, stub=("issue_refund",)) as session, agent_run(AGENT, input={"customer_id": "c4"}):
        assert support_agent("c4", "1.1") == "You owe 42."  # the recorded timeout is raised again, then retried
    assert session.stats["tape_hits"] == 5 and session.stats["live_tool_calls"] == 0
    failure = tapes[ids['{"customer_id":"bad1"}']]
    with (
        pytest.raises(BillingError, match="no account bad1"),
        replay(failure.path),
        agent_run(AGENT, input={"customer_id": "bad1"}),
    ):
        support_agent("bad1", "1.0")


def test_foreign_spans_come_back_as_a_self_contained_tape(store_location: str, tmp_path: Path) -> None:
    """Steps another instrumentation wrote (no agent_replay.* step attributes) get theirs in the golden tape."""
    recorded = record_support(tmp_path / "ours.jsonl", "1.0", ["c1"])
    ours = {"agent_replay.run_id", "agent_replay.seq", "agent_replay.step_id", "agent_replay.call_key"}
    lines = []
    for line in recorded.read_text(encoding="utf-8").splitlines():
        doc = orjson.loads(line)
        span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        if not span["name"].startswith("invoke_agent"):
            span["attributes"] = [kv for kv in span["attributes"] if kv["key"] not in ours]
        lines.append(orjson.dumps(doc).decode())
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open_store(store_location) as store:
        store.ingest(foreign, tags=["ext"])
        (tape,) = golden(store, tag="ext", per_tag=1, out_dir=tmp_path / "golden")
    (loaded,) = load_tape(foreign).runs
    (written,) = load_tape(tape.path).runs
    assert [(s.tool, s.seq, s.step_id, s.call_key) for s in written.steps] == [
        (s.tool, s.seq, s.step_id, s.call_key) for s in loaded.steps
    ]
    for line in tape.path.read_text(encoding="utf-8").splitlines():
        span = orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        if not span["name"].startswith("invoke_agent"):
            assert ours <= {kv["key"] for kv in span["attributes"]}
