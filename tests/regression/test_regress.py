"""regress(): a new version on recorded sessions, offline: out of bounds counted, runs and evaluations stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import regress_agent as shop
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from otel_agent_replay import ConfigurationError, TapeNotFoundError, regress, rescore
from otel_agent_replay.core import attributes as A
from otel_agent_replay.regression import no_out_of_bounds, output_matches_schema, tool_success
from otel_agent_replay.store import golden, open_store, report_rows

EVALUATORS = (tool_success(), no_out_of_bounds(), shop.confirmed, output_matches_schema(shop.OUTPUT_SCHEMA))


class _Collect(SpanProcessor):
    """Keeps the spans that end while a test that asked for them runs (the SDK cannot remove a processor)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] | None = None

    def on_end(self, span: ReadableSpan) -> None:
        if self.spans is not None:
            self.spans.append(span)


_COLLECT = _Collect()
_ADDED_TO: list[TracerProvider] = []


@pytest.fixture
def spans() -> Iterator[list[ReadableSpan]]:
    """Every span ended while the test runs, from the SDK provider that record() uses."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    if provider not in _ADDED_TO:
        provider.add_span_processor(_COLLECT)
        _ADDED_TO.append(provider)
    _COLLECT.spans = []
    yield _COLLECT.spans
    _COLLECT.spans = None


@pytest.fixture
def golden_set(store_location: str, tmp_path: Path) -> Path:
    with open_store(store_location) as store:
        shop.record_v1(tmp_path / "v1.jsonl", store)
        rescore(store, EVALUATORS, criteria_version="c1", agent_version="v1")
        golden(store, tag="orders", per_tag=6, out_dir=tmp_path / "golden")
    shop.RAN.clear()
    return tmp_path / "golden"


def test_regress_of_v2_counts_out_of_bounds_calls_and_stores_its_runs(
    golden_set: Path, store_location: str, spans: list[ReadableSpan]
) -> None:
    result = regress(
        golden_set, shop.assistant_v2, agent_version="v2", store=store_location, evaluators=EVALUATORS,
        criteria_version="c1",
    )  # fmt: skip
    assert shop.RAN == [], "nothing ran for real: tools and the model were served from the recordings"
    assert result.baseline == "v1" and len(result.cases) == 6
    assert result.out_of_bounds_calls == 5  # every case but the unknown order asked for the weather
    for case in result.cases:
        assert case.error is None, case.error
        assert case.session_id is not None and case.session_id != case.recorded_session
        if case.out_of_bounds:
            assert case.out_of_bounds == ("lookup_weather",)
            assert not case.passed
    with open_store(store_location) as store:
        v2 = store.sessions(agent_version="v2")
        assert len(v2) == 6
        assert all("orders" in s.tags for s in v2), "the new sessions keep the recorded sessions' tags"
        weathered = next(c for c in result.cases if c.out_of_bounds)
        calls = store.tool_calls(weathered.session_id or "")
        oob = [c for c in calls if c.tool_name == "lookup_weather"]
        assert oob and oob[0].status == "error" and oob[0].error == "unexpected_tool_call"
        evals = store.evals(weathered.session_id or "")
        assert {e.metric for e in evals} == {"tool_success", "no_out_of_bounds", "confirmed", "output_schema"}
        assert all(e.criteria_version == "c1" and e.judge_model is None for e in evals)
        report = report_rows(store, compare=("v1", "v2"), criteria_version="c1")
    rows = {r.group: r for r in report.rows}
    assert rows["v2"].out_of_bounds_calls == 5 and rows["v1"].out_of_bounds_calls == 0
    assert (rows["v2"].pass_rate or 0) < (rows["v1"].pass_rate or 0)
    # Each evaluation is a gen_ai.evaluation.result event on the evaluated run's span.
    run_spans = [s for s in spans if (s.attributes or {}).get(A.MODE) == A.MODE_REPLAY
                 and (s.attributes or {}).get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT]  # fmt: skip
    assert len(run_spans) == 6
    first = run_spans[0]
    assert (first.attributes or {})[A.AGENT_VERSION] == "v2"
    events = [e for e in first.events if e.name == A.EVALUATION_EVENT]
    assert [e.attributes[A.GEN_AI_EVALUATION_NAME] for e in events if e.attributes] == [
        "tool_success", "no_out_of_bounds", "confirmed", "output_schema",
    ]  # fmt: skip
    confirmed = next(
        e.attributes for e in events if e.attributes and e.attributes[A.GEN_AI_EVALUATION_NAME] == "confirmed"
    )
    assert confirmed[A.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    assert confirmed[A.GEN_AI_EVALUATION_SCORE_VALUE] == 0.5
    assert "confirmation" in str(confirmed[A.GEN_AI_EVALUATION_EXPLANATION])
    assert confirmed[A.EVALUATION_CRITERIA_VERSION] == "c1"


def test_regress_again_under_the_same_version_replaces_its_earlier_runs(golden_set: Path, store_location: str) -> None:
    first = regress(golden_set, shop.assistant_v2, agent_version="v2", store=store_location, evaluators=EVALUATORS)
    with open_store(store_location) as store:
        counts = store.counts()
    second = regress(golden_set, shop.assistant_v2, agent_version="v2", store=store_location, evaluators=EVALUATORS)
    with open_store(store_location) as store:
        assert store.counts() == counts, "the same rows again, not twice as many"
        assert {s.session_id for s in store.sessions(agent_version="v2")} == {c.session_id for c in second.cases}
        assert store.delete_session(first.cases[0].session_id or "") is False  # already replaced
        assert len(store.sessions(agent_version="v1")) == 6, "other versions are never touched"


def test_regress_by_tag_takes_the_stored_sessions_and_an_llm_judge_is_stamped_with_its_model(
    golden_set: Path, store_location: str
) -> None:
    result = regress(
        None, shop.assistant_v1, agent_version="v1.1", store=store_location, evaluators=[shop.polite], tag="vip"
    )
    assert len(result.cases) == 2 and result.out_of_bounds_calls == 0
    assert all(c.passed for c in result.cases)
    with open_store(store_location) as store:
        evals = store.evals(result.cases[0].session_id or "")
    assert [(e.metric, e.judge_model, e.passed) for e in evals] == [("polite", "judge-stand-in-1", True)]


def test_rescore_adds_rows_under_new_criteria_and_leaves_the_sessions_alone(
    golden_set: Path, store_location: str
) -> None:
    with open_store(store_location) as store:
        before = store.counts()
        sessions = store.sessions()
    rescored = rescore(store_location, [shop.stricter], criteria_version="c2")
    assert len(rescored) == 6
    with open_store(store_location) as store:
        after = store.counts()
        assert store.sessions() == sessions
        assert after["eval_record"] == before["eval_record"] + 6
        assert {k: v for k, v in after.items() if k != "eval_record"} == {
            k: v for k, v in before.items() if k != "eval_record"
        }
        c2 = [e for s in sessions for e in store.evals(s.session_id) if e.criteria_version == "c2"]
    assert len(c2) == 6 and {e.metric for e in c2} == {"mentions_order"}


def test_models_live_runs_the_model_while_tools_stay_replayed(golden_set: Path, store_location: str) -> None:
    result = regress(golden_set, shop.assistant_v1, agent_version="v1-live", store=store_location, models="live")
    assert all(c.error is None and c.out_of_bounds == () for c in result.cases)
    assert shop.RAN == ["plan"] * 6, "only the model ran; the tools and the confirmation were served"


def test_bad_suites_and_broken_evaluators(tmp_path: Path, store_location: str) -> None:
    with pytest.raises(TapeNotFoundError, match="no such folder"):
        regress(tmp_path / "nope", shop.assistant_v2, agent_version="v2", store=store_location)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TapeNotFoundError, match="no tapes"):
        regress(tmp_path / "empty", shop.assistant_v2, agent_version="v2", store=store_location)
    with pytest.raises(ConfigurationError, match="agent_version"):
        regress(tmp_path, shop.assistant_v2, agent_version=" ", store=store_location)
    with pytest.raises(ConfigurationError, match="no finished sessions tagged 'nothing'"):
        regress(None, shop.assistant_v2, agent_version="v2", store=store_location, tag="nothing")


def test_an_agent_that_raises_or_drifts_is_a_failed_case_not_a_failed_regress(
    golden_set: Path, store_location: str
) -> None:
    def broken(view: object) -> None:
        raise RuntimeError("judge offline")

    def drifting(order_id: str, sku: str) -> object:
        return shop.assistant_v1(order_id + "-x", sku)

    result = regress(golden_set, drifting, agent_version="v3", store=store_location, evaluators=[broken])
    assert len(result.cases) == 6
    assert all(c.error and "TapeDrift" in c.error for c in result.cases)
    assert all(c.status == "failed" for c in result.cases), "the run is stored, as failed"
    assert all(c.problems == ("evaluator broken raised RuntimeError: judge offline",) for c in result.cases)
