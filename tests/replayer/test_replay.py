"""replay(): hit, drift, miss, unused; side effects fail closed; modes, fakes, overrides, staleness, spans."""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import os
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.rawtape import raw_spans

from otel_agent_replay import (
    AgentReplayError,
    RecordedToolError,
    ReplayDivergence,
    SideEffectRefused,
    Tape,
    TapeDrift,
    TapeError,
    TapeMiss,
    TapeNotFoundError,
    TapeStale,
    TapeUnused,
    TapeWarning,
    agent_run,
    load_tape,
    model_call,
    record,
    replay,
    tool,
)
from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.core import attributes as A

CALLS: list[str] = []  # what really ran


class InventoryDown(Exception):
    pass


@tool(side_effect="read_only", version="1")
def search(query: str, limit: int = 3) -> list[str]:
    CALLS.append(f"search:{query}:{limit}")
    return [f"{query}-{i}" for i in range(limit)]


@tool(side_effect="read_only")
def stock(sku: str) -> int:
    CALLS.append(f"stock:{sku}")
    if sku == "broken":
        raise InventoryDown(f"inventory service down for {sku}")
    return 7


@model_call(provider="stand-in", model="tiny")
def decide(question: str, max_words: int = 120) -> dict[str, Any]:
    CALLS.append(f"decide:{max_words}")
    return {"answer": f"{question} in {max_words} words", "usage": {"input_tokens": 5, "output_tokens": 7}}


@tool(side_effect="write")
def write_file(path: str, body: str) -> dict[str, Any]:
    CALLS.append(f"write:{path}")
    Path(path).write_text(body)
    return {"written": len(body)}


@tool
def undeclared_send(to: str) -> str:
    CALLS.append(f"send:{to}")
    return "sent"


def agent(out: Path, *, max_words: int = 120, extra_search: bool = False, query: str = "refund") -> dict[str, Any]:
    found = search(query)
    if extra_search:
        search("carrier")
    answer = decide(f"about {found[0]}", max_words=max_words)
    written = write_file(str(out), answer["answer"])
    return {"found": found, "answer": answer["answer"], "written": written}


@pytest.fixture(autouse=True)
def _no_calls() -> Iterator[None]:
    CALLS.clear()
    yield


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A tape of one agent run, recorded for real; the report file is then deleted."""
    tape, out = tmp_path / "tapes" / "agent.jsonl", tmp_path / "report.txt"
    with record(tape), agent_run("helper", agent_version="1") as run:
        result = agent(out)
        run.set_output(result)
    out.unlink()
    CALLS.clear()
    return tape, out, result


# --- 1, 2: hits, results, errors ---------------------------------------------------------


def test_strict_replay_serves_every_call_with_no_live_call(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, result = recorded
    with replay(tape, stub=("write_file",)) as r, agent_run("helper"):
        replayed = agent(out)
    assert replayed == result
    assert CALLS == [] and not out.exists()
    stats = r.stats
    assert stats["live_tool_calls"] == 0 and stats["real_side_effects"] == 0 and stats["drift_events"] == 0
    assert stats["tape_hits"] == 3 and stats["stubbed_side_effects"] == 1 and stats["unused_entries"] == 0
    assert stats["mode"] == "none" and stats["steps"] == 3
    assert r.report == ()


def test_a_loaded_tape_replays_too(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, result = recorded
    with replay(load_tape(tape), stub=("write_file",)), agent_run("helper"):
        assert agent(out) == result


def test_repeated_identical_calls_are_served_in_recorded_order(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    answers = iter([1, 2, 3])

    @tool(side_effect="read_only")
    def poll(job: str) -> int:
        return next(answers)

    with record(tape), agent_run("p"):
        assert [poll("j"), poll("j"), poll("j")] == [1, 2, 3]
    with replay(tape) as r, agent_run("p"):
        assert [poll("j"), poll("j"), poll("j")] == [1, 2, 3]
    assert r.stats["tape_hits"] == 3


def test_recorded_exceptions_are_raised_again_as_their_type(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"), pytest.raises(InventoryDown):
        stock("broken")
    with replay(tape) as r, agent_run("a"), pytest.raises(InventoryDown, match="inventory service down"):
        stock("broken")
    assert CALLS == ["stock:broken"] and r.stats["tape_hits"] == 1


def test_unimportable_recorded_exception_becomes_recorded_tool_error(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    code = textwrap.dedent(
        f"""
        from otel_agent_replay import agent_run, record, tool

        class PaymentGatewayError(Exception):
            pass

        @tool(side_effect="read_only")
        def stock(sku: str) -> int:
            raise PaymentGatewayError("gateway timeout")

        with record({str(tape)!r}), agent_run("a"):
            try:
                stock("x")
            except PaymentGatewayError:
                pass
        """
    )
    subprocess.run([os.sys.executable, "-c", code], check=True, timeout=60)  # type: ignore[attr-defined]
    with replay(tape) as r, agent_run("a"), pytest.raises(RecordedToolError) as caught:
        stock("x")
    assert caught.value.type_name == "__main__.PaymentGatewayError" and "gateway timeout" in str(caught.value)
    assert r.stats["tape_hits"] == 1 and CALLS == []


# --- 2, 3: drift, miss, unused and their messages ------------------------------------------


def test_drift_names_position_keys_and_field_difference(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    with pytest.raises(TapeDrift) as caught, replay(tape, stub=("write_file",)) as r, agent_run("helper"):
        agent(out, max_words=80)
    message = str(caught.value)
    recorded_run = load_tape(tape).runs[0]
    assert isinstance(caught.value, AssertionError)
    assert f"run {recorded_run.run_id}" in message
    assert "1st call of decide" in message and "live seq 2" in message and "recorded seq 2" in message
    assert "max_words: 120 → 80" in message
    assert recorded_run.steps[1].call_key in message
    assert '"max_words":120' in message and '"max_words":80' in message
    assert "mode='all'" in message
    assert r.stats["drift_events"] == 1 and CALLS == []
    assert [d.kind for d in r.report][:1] == ["drift"]


def test_miss_lists_nearest_recordings_and_how_to_record(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    with pytest.raises(TapeMiss) as caught, replay(tape, stub=("write_file",)) as r, agent_run("helper"):
        agent(out, extra_search=True)
    message = str(caught.value)
    assert isinstance(caught.value, AssertionError)
    assert "2nd call of search" in message and '"query":"carrier"' in message
    assert "nearest recorded calls of search" in message and 'query: "refund" → "carrier"' in message
    assert "mode='new_episodes'" in message
    assert r.stats["tape_misses"] == 1 and CALLS == []


def test_unused_steps_fail_a_strict_replay_unless_allowed(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, _, _ = recorded
    with pytest.raises(TapeUnused) as caught, replay(tape) as r, agent_run("helper"):
        search("refund")  # the model step and the write are never asked for
    assert "2 recorded step(s)" in str(caught.value) and "decide#1" in str(caught.value)
    assert r.stats["unused_entries"] == 2
    with replay(tape, allow_unused=True) as r2, agent_run("helper"):
        search("refund")
    assert r2.stats["unused_entries"] == 2 and {d.kind for d in r2.report} == {"unused"}


def test_swallowed_divergence_still_fails_the_replay(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    with pytest.raises(TapeDrift), replay(tape, stub=("write_file",), allow_unused=True), agent_run("helper"):
        try:  # noqa: SIM105 - written the way an agent that catches everything is written
            agent(out, max_words=80)
        except Exception:  # such an agent must not hide drift
            pass


# --- 4: record modes ------------------------------------------------------------------------


def test_mode_none_needs_the_tape(tmp_path: Path) -> None:
    with pytest.raises(TapeNotFoundError, match="mode='once'"), replay(tmp_path / "missing.jsonl"):
        pass


def test_a_strict_replay_of_a_tape_without_a_step_fails(tmp_path: Path) -> None:
    tape = tmp_path / "empty.jsonl"
    with record(tape), agent_run("helper"):
        pass  # the agent called nothing decorated, and no captured HTTP
    assert load_tape(tape).runs and not any(run.steps for run in load_tape(tape).runs)
    with pytest.raises(TapeError) as caught, replay(tape), agent_run("helper"):
        pytest.fail("the replay must not start")
    message = str(caught.value)
    assert str(tape) in message and "1 run and no step" in message
    assert "mode='all'" in message and "@tool" in message
    assert isinstance(caught.value, AgentReplayError)
    with pytest.raises(TapeError, match="no run"), replay(Tape(str(tape), ())):
        pass
    # only the strict mode: new_episodes may fill it, and a mode that records never reads it
    with replay(tape, mode="new_episodes", allow_unused=True), agent_run("helper"):
        pass
    with replay(tape, mode="all"), agent_run("helper"):
        pass


def test_mode_once_records_when_missing_then_replays(tmp_path: Path) -> None:
    tape, out = tmp_path / "once.jsonl", tmp_path / "r.txt"
    with replay(tape, mode="once") as first, agent_run("helper"):
        agent(out)
    assert first.stats["mode"] == "record" and first.stats["live_tool_calls"] == 2
    assert first.stats["live_model_calls"] == 1
    assert first.stats["real_side_effects"] == 1 and tape.exists()
    out.unlink()
    CALLS.clear()
    with replay(tape, mode="once", stub=("write_file",)) as second, agent_run("helper"):
        agent(out)
    assert second.stats["mode"] == "once" and second.stats["live_tool_calls"] == 0 and CALLS == []


def test_mode_all_records_again_and_replaces_the_tape(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    with replay(tape, mode="all") as r, agent_run("helper"):
        agent(out, max_words=80)
    assert r.stats["mode"] == "record" and len(CALLS) == 3
    (run,) = load_tape(tape).runs
    assert run.steps[1].args["max_words"] == 80
    assert [p.name for p in tape.parent.iterdir()] == [tape.name]  # no temporary file left


def test_new_episodes_runs_a_read_only_miss_once_and_appends_it(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    before = load_tape(tape).runs[0]
    with replay(tape, mode="new_episodes", stub=("write_file",)) as r, agent_run("helper"):
        agent(out, extra_search=True)
    assert CALLS == ["search:carrier:3"]  # only the new step ran
    assert r.stats["live_tool_calls"] == 1 and r.stats["tape_misses"] == 1 and r.stats["real_side_effects"] == 0
    (after,) = load_tape(tape).runs
    assert after.run_id == before.run_id and after.trace_id == before.trace_id
    appended = after.steps[-1]
    assert appended.tool == "search" and appended.args == {"query": "carrier", "limit": 3}
    assert appended.seq == max(s.seq for s in before.steps) + 1 and appended.step_id == "search#2"
    assert appended.parent_span_id == before.span_id
    CALLS.clear()
    with replay(tape, stub=("write_file",), allow_unused=True) as strict, agent_run("helper"):
        search("refund")
        search("carrier")  # now a hit
    assert strict.stats["tape_hits"] == 2 and CALLS == []


def test_new_episodes_never_records_over_drift_nor_runs_writes(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    size = tape.stat().st_size
    with pytest.raises(TapeDrift), replay(tape, mode="new_episodes", stub=("write_file",)), agent_run("helper"):
        agent(out, max_words=80)
    with (
        pytest.raises(TapeMiss, match="not read-only"),
        replay(tape, mode="new_episodes", stub=("write_file",), allow_unused=True),
        agent_run("helper"),
    ):
        write_file(str(out), "about refund-0 in 120 words")  # the recorded write: served, not run
        write_file(str(out), "other body")  # a new write: a miss that no mode runs
    assert tape.stat().st_size == size and not out.exists() and CALLS == []


# --- 5: side effects fail closed -------------------------------------------------------------


def test_write_tools_are_refused_by_default(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    with pytest.raises(SideEffectRefused) as caught, replay(tape) as r, agent_run("helper"):
        agent(out)
    assert "write_file" in str(caught.value) and "stub=('write_file',)" in str(caught.value)
    assert r.stats["refused_side_effects"] == 1 and not out.exists()


def test_undeclared_tools_are_refused_and_can_be_declared(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        undeclared_send("bob")
    CALLS.clear()
    with pytest.raises(SideEffectRefused, match="declares no side effect"), replay(tape), agent_run("a"):
        undeclared_send("bob")
    with replay(tape, declare={"undeclared_send": "read_only"}) as r, agent_run("a"):
        assert undeclared_send("bob") == "sent"
    assert CALLS == [] and r.stats["tape_hits"] == 1


_DRIFT_MISS = ("clean", "TapeDrift", "TapeMiss")


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ("SideEffectRefused", "TapeDrift", "TapeMiss")),
        ({"stub": ("write_file",)}, _DRIFT_MISS),
        ({"side_effects": "stub"}, _DRIFT_MISS),
        # the extra read-only search runs live and is appended; the write after it is refused (not stubbed)
        ({"mode": "new_episodes"}, ("SideEffectRefused", "TapeDrift", "SideEffectRefused")),
        ({"mode": "new_episodes", "side_effects": "stub"}, ("clean", "TapeDrift", "clean")),
        ({"mode": "once", "stub": ("write_file",)}, _DRIFT_MISS),
        (
            {"fallbacks": {"search": lambda query, limit=3: ["fake"]}},
            ("SideEffectRefused", "TapeDrift", "SideEffectRefused"),
        ),
        ({"overrides": {"write_file": {"written": 0}}, "stub": ("write_file",)}, _DRIFT_MISS),
        ({"models": "live", "stub": ("write_file",)}, _DRIFT_MISS),
        ({"spans": False, "side_effects": "stub"}, _DRIFT_MISS),
    ],
)
def test_the_real_write_never_happens_in_any_replay(
    recorded: tuple[Path, Path, dict[str, Any]], options: dict[str, Any], expected: tuple[str, ...]
) -> None:
    """Each replay ends as it must (clean, or with the divergence its change causes), and none writes."""
    tape, out, _ = recorded
    outcomes = []
    for variant in ({}, {"max_words": 80}, {"extra_search": True}):
        outcome = "clean"
        try:
            with replay(tape, allow_unused=True, **options), agent_run("helper"):
                agent(out, **variant)
        except ReplayDivergence as exc:  # a divergence is fine here; a write is not
            outcome = type(exc).__name__
        outcomes.append(outcome)
        assert not out.exists(), (options, variant)
        assert not any(c.startswith("write:") for c in CALLS), (options, variant)
    assert tuple(outcomes) == expected


# --- 6, 7: contract fakes and overrides -------------------------------------------------------


def test_fallbacks_serve_misses(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    fake_calls: list[str] = []

    def fake_search(query: str, limit: int = 3) -> list[str]:
        fake_calls.append(query)
        return [f"fake-{query}"]

    with replay(tape, stub=("write_file",), fallbacks={"search": fake_search}) as r, agent_run("helper"):
        agent(out, extra_search=True)
    assert fake_calls == ["carrier"] and CALLS == []
    assert r.stats["fallback_calls"] == 1 and r.stats["tape_misses"] == 1 and r.stats["tape_hits"] == 3


def test_overrides_replace_results_or_raise(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        stock("a")
        stock("a")
        search("q")
    CALLS.clear()
    with replay(tape, overrides={("stock", 2): 0, "search": {"status": 500}}) as r, agent_run("a"):
        assert stock("a") == 7  # only the 2nd call is overridden
        assert stock("a") == 0
        assert search("q") == {"status": 500}
    assert r.stats["overrides_applied"] == 2 and CALLS == []
    with (
        replay(tape, overrides={"stock": TimeoutError("upstream timed out")}, allow_unused=True),
        agent_run("a"),
        pytest.raises(TimeoutError, match="upstream timed out"),
    ):
        stock("a")


# --- 8: model steps ----------------------------------------------------------------------------


def test_models_from_tape_or_live(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, result = recorded
    with replay(tape, stub=("write_file",)) as r, agent_run("helper"):
        assert agent(out)["answer"] == result["answer"]
    assert "decide:120" not in CALLS and r.stats["live_model_calls"] == 0
    with replay(tape, stub=("write_file",), models="live") as live, agent_run("helper"):
        agent(out)
    assert CALLS == ["decide:120"] and live.stats["live_model_calls"] == 1 and live.stats["unused_entries"] == 0
    CALLS.clear()
    with replay(tape, models="live", allow_unused=True) as changed, agent_run("helper"):
        decide("another question", max_words=80)  # a changed model call runs live: no drift
    assert CALLS == ["decide:80"] and changed.stats["drift_events"] == 0


# --- 9: staleness --------------------------------------------------------------------------------


def test_max_age_fails_as_stale(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, _, _ = recorded
    lines = tape.read_text().splitlines()
    old = "2020-01-01T00:00:00.000000+00:00"
    patched = []
    for line in lines:
        doc = orjson.loads(line)
        for attr in doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0].get("attributes", []):
            if attr["key"] == A.RECORDED_AT:
                attr["value"]["stringValue"] = old
        patched.append(orjson.dumps(doc).decode())
    tape.write_text("\n".join(patched) + "\n")
    with pytest.raises(TapeStale, match="older than max_age"), replay(tape, max_age=dt.timedelta(days=30)):
        pass
    with replay(tape, max_age=10 * 365 * 86400, stub=("write_file",), allow_unused=True):
        pass


def test_expired_steps_warn_and_changed_versions_are_stale(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"

    @tool(side_effect="read_only", ttl=0.001, version="1")
    def price(sku: str) -> float:
        return 9.5

    with record(tape), agent_run("a"):
        price("a")
    import time

    time.sleep(1.1)  # expires_at has second precision
    with pytest.warns(TapeWarning, match="expired"), replay(tape) as r, agent_run("a"):
        assert price("a") == 9.5
    assert r.stats["stale_steps"] == 1 and r.report[0].kind == "expired"

    @tool(side_effect="read_only", version="2", name="search")
    def search_v2(query: str, limit: int = 3) -> list[str]:
        return []

    tape2 = tmp_path / "t2.jsonl"
    with record(tape2), agent_run("a"):
        search("q")
    with (
        pytest.warns(TapeWarning, match="version '2' now but was recorded at version '1'"),
        replay(tape2),
        agent_run("a"),
    ):
        assert search_v2("q") == ["q-0", "q-1", "q-2"]
    with pytest.raises(TapeStale), replay(tape2, stale_versions="error", allow_unused=True), agent_run("a"):
        search_v2("q")


# --- 10: replay spans -----------------------------------------------------------------------------


def test_replay_spans_land_in_a_tape_linked_to_the_recording(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    replayed_tape = tape.with_name("replayed.jsonl")
    original = load_tape(tape).runs[0]
    with record(replayed_tape), replay(tape, stub=("write_file",)), agent_run("helper"):
        agent(out)
    (run,) = load_tape(replayed_tape).runs
    assert run.mode == "replay" and run.replay_of == original.run_id and run.run_id != original.run_id
    assert [(s.tool, s.seq, s.args, s.result) for s in run.steps] == [
        (s.tool, s.seq, s.args, s.result) for s in original.steps
    ]
    spans = {s.span_id: s for s in raw_spans(replayed_tape)}
    run_span = next(s for s in spans.values() if s.attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT)
    assert run_span.span["links"][0]["spanId"] == original.span_id
    first_step = next(s for s in spans.values() if s.attrs.get(A.SEQ) == 1)
    assert first_step.span["links"][0]["spanId"] == original.steps[0].span_id


def test_replay_spans_can_be_switched_off(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    replayed_tape = tape.with_name("quiet.jsonl")
    with record(replayed_tape), replay(tape, stub=("write_file",), spans=False) as r, agent_run("helper"):
        agent(out)
    assert r.stats["tape_hits"] == 3
    assert not replayed_tape.exists() or raw_spans(replayed_tape) == []


# --- 1, 11: several runs, stats, report, options ----------------------------------------------------


def test_several_runs_replay_in_order_and_count_mismatch_is_reported(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape):
        for sku in ("a", "b", "c"):
            with agent_run("inv"):
                stock(sku)
    CALLS.clear()
    with replay(tape) as r:
        for sku in ("a", "b", "c"):
            with agent_run("inv"):
                stock(sku)
    assert r.stats["runs_replayed"] == 3 and r.stats["tape_hits"] == 3
    with pytest.raises(TapeUnused), replay(tape) as short, agent_run("inv"):
        stock("a")
    assert {d.kind for d in short.report} == {"run_count", "unused"}
    runs = load_tape(tape).runs
    with replay(tape, run_id=runs[1].run_id) as one, agent_run("inv"):
        stock("b")
    assert one.stats["tape_hits"] == 1 and CALLS == []
    with replay(tape, trace_id=runs[2].trace_id), agent_run("inv"):
        stock("c")


def test_stats_have_every_counter(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, _ = recorded
    with replay(tape, stub=("write_file",)) as r, agent_run("helper"):
        agent(out)
    assert set(r.stats) >= {
        "mode",
        "steps",
        "tape_hits",
        "tape_misses",
        "live_tool_calls",
        "real_side_effects",
        "drift_events",
        "refused_side_effects",
        "stubbed_side_effects",
        "fallback_calls",
        "overrides_applied",
        "unused_entries",
    }


def test_bad_options_are_configuration_errors(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, _, _ = recorded
    with pytest.raises(ConfigurationError, match="mode='sometimes'"):
        replay(tape, mode="sometimes")
    with pytest.raises(ConfigurationError, match="side_effects"):
        replay(tape, side_effects="allow")
    with pytest.raises(ConfigurationError, match="max_age"):
        replay(tape, max_age=0)
    with pytest.raises(ConfigurationError, match="tape path"):
        replay(load_tape(tape), mode="all")


def test_decorator_and_async_context_manager(recorded: tuple[Path, Path, dict[str, Any]]) -> None:
    tape, out, result = recorded

    @replay(tape, stub=("write_file",))
    def replayed() -> dict[str, Any]:
        with agent_run("helper"):
            return agent(out)

    assert replayed() == result

    async def main() -> dict[str, Any]:
        async with replay(tape, stub=("write_file",)) as r, agent_run("helper"):
            value = agent(out)
        assert r.stats["tape_hits"] == 3
        return value

    assert asyncio.run(main()) == result and CALLS == []


def test_doubles_for_a_framework_registry(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"

    def lookup_order(order_id: str) -> dict[str, str]:  # a plain function a framework holds
        CALLS.append(f"lookup:{order_id}")
        return {"order": order_id, "state": "shipped"}

    def cancel_order(order_id: str) -> str:
        CALLS.append(f"cancel:{order_id}")
        return "cancelled"

    with record(tape), agent_run("fw"):
        registry = {"lookup_order": tool(side_effect="read_only")(lookup_order)}
        registry["lookup_order"]("o1")
    CALLS.clear()
    with replay(tape) as r, agent_run("fw"):
        double = r.double(lookup_order, side_effect="read_only")
        import inspect

        assert inspect.signature(double) == inspect.signature(lookup_order)
        assert double("o1") == {"order": "o1", "state": "shipped"}
    with pytest.raises(SideEffectRefused, match="cancel_order"), replay(tape, allow_unused=True) as r2, agent_run("fw"):
        doubles = r2.doubles({"lookup_order": lookup_order, "cancel_order": cancel_order})
        doubles["cancel_order"]("o1")  # undeclared: not read-only, refused
    with pytest.raises(SideEffectRefused, match="lookup_order"), replay(tape) as r3, agent_run("fw"):
        r3.doubles([lookup_order])[0]("o1")
    assert CALLS == []


# --- 12: concurrency --------------------------------------------------------------------------------


def test_concurrent_calls_hit_whatever_the_completion_order(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"

    @tool(side_effect="read_only")
    async def fetch(n: int) -> int:
        await asyncio.sleep(0.001 * (n % 5))
        return n * n

    async def run_agent(order: list[int]) -> list[int]:
        async with agent_run("gather"):
            return list(await asyncio.gather(*(fetch(n) for n in order)))

    with record(tape):
        assert asyncio.run(run_agent(list(range(20)))) == [n * n for n in range(20)]
    shuffled = list(reversed(range(20)))
    with replay(tape) as r:
        assert asyncio.run(run_agent(shuffled)) == [n * n for n in shuffled]
    assert r.stats["tape_hits"] == 20 and r.stats["drift_events"] == 0

    with replay(tape) as threaded, agent_run("gather"):
        results: dict[int, int] = {}

        def worker(n: int) -> None:
            results[n] = asyncio.run(fetch(n))

        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker, n)) for n in shuffled]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {n: n * n for n in range(20)} and threaded.stats["tape_hits"] == 20


# --- foreign tapes ---------------------------------------------------------------------------------


_FOREIGN = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(sys.argv[1])))
    tracer = provider.get_tracer("someone-elses-agent")
    with tracer.start_as_current_span("invoke_agent travel", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"}):
        for city, temp in (("Oslo", 3), ("Rome", 19)):
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_" + city,
                "gen_ai.tool.call.arguments": '{"city": "%s", "unit": "C"}' % city,
                "gen_ai.tool.call.result": '{"temp": %d}' % temp,
            }):
                pass
    provider.shutdown()
    """
)


def test_a_tape_from_otels_own_json_file_exporter_replays(tmp_path: Path) -> None:
    python = os.environ.get("AGENT_REPLAY_OTLPFILE_PYTHON")
    assert python, "run the tests through scripts/dev.sh test, which sets up OTel's file exporter"
    tape = tmp_path / "foreign.jsonl"
    subprocess.run([python, "-c", _FOREIGN, str(tape)], check=True, timeout=120)
    assert b"agent_replay" not in tape.read_bytes()

    def get_weather(city: str, unit: str = "C") -> dict[str, int]:
        raise AssertionError("the real tool must not run")

    with replay(tape, declare={"get_weather": "read_only"}) as r, agent_run("travel"):
        weather = r.double(get_weather)
        assert weather("Rome") == {"temp": 19}
        assert weather(city="Oslo", unit="C") == {"temp": 3}
    assert r.stats["tape_hits"] == 2 and r.stats["unused_entries"] == 0


def test_a_call_in_a_run_beyond_the_recorded_ones_says_so(tape: Path) -> None:
    with record(tape), agent_run("shop"):
        stock("a")
    with pytest.raises(TapeMiss) as caught, replay(tape, allow_unused=True):
        with agent_run("shop"):
            stock("a")
        with agent_run("shop"):
            stock("a")  # one more run than recorded
    message = str(caught.value)
    assert "belongs to run" in message and "(shop), which has no recorded run left" in message
    assert "started more runs than were recorded" in message
    assert "a run the tape does not have" not in message
