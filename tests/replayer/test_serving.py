"""The replay span of a hit: the recorded step's attributes, the recorded result's JSON text as it
is on the tape, a link to the recorded span, the recorded failure; under the run span."""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from pathlib import Path

import pytest
from helpers.rawtape import RawSpan, raw_spans, steps_of

from otel_agent_replay import agent_run, load_tape, record, replay, tool
from otel_agent_replay.core import attributes as A


@dataclasses.dataclass
class Doc:
    title: str
    pages: int


@tool(side_effect="read_only")
def search(query: str, limit: int = 3) -> dict[str, object]:
    return {"query": query, "hits": [f"{query}-{n}" for n in range(limit)], "note": "  kept as recorded  "}


@tool(side_effect="read_only")
def fetch(title: str) -> Doc:
    return Doc(title, 12)


@tool(side_effect="read_only", version="2")
def lookup(key: str) -> str:
    raise KeyError(key)


@tool(side_effect="read_only")
def page(n: int) -> str:
    return "x" * 300 + str(n)


def agent() -> list[object]:
    out: list[object] = [search("refund"), search("refund", limit=1), fetch("manual")]
    try:
        lookup("k-1")
    except KeyError as exc:
        out.append(exc.args)
    out.append(page(7))
    box: list[object] = []
    worker = threading.Thread(target=contextvars.copy_context().run, args=(lambda: box.append(search("other")),))
    worker.start()
    worker.join()
    return out + box


# Per replayed step: what differs from its recording by design (the live run's ids).
_LIVE = (A.RUN_ID, A.GEN_AI_TOOL_CALL_ID)


def _steps(path: Path) -> list[RawSpan]:
    return sorted(steps_of(path), key=lambda s: int(s.attrs[A.SEQ]))


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[object]]:
    tape = tmp_path / "t.jsonl"
    with record(tape, max_string=128, store_full_payloads=True), agent_run("helper"):
        out = agent()
    return tape, out


def test_a_hit_span_carries_the_recorded_step_as_the_tape_has_it(recorded: tuple[Path, list[object]]) -> None:
    tape, out = recorded
    replayed = tape.with_name("replayed.jsonl")
    with record(replayed), replay(tape), agent_run("helper"):
        assert agent() == out
    before, after = _steps(tape), _steps(replayed)
    assert [s.name for s in after] == [s.name for s in before] and len(after) == 6
    for old, new in zip(before, after, strict=True):
        assert {k: v for k, v in new.attrs.items() if k not in _LIVE} == {
            k: v for k, v in old.attrs.items() if k not in _LIVE
        }
        # the same attributes in the same order, the recorded result's JSON text unchanged
        assert list(new.attrs) == list(old.attrs)
        assert new.attrs.get(A.GEN_AI_TOOL_CALL_RESULT) == old.attrs.get(A.GEN_AI_TOOL_CALL_RESULT)
        assert new.span["links"][0]["spanId"] == old.span_id
        assert new.span.get("status", {}) == old.span.get("status", {})
        assert [e["name"] for e in new.span.get("events", [])] == [e["name"] for e in old.span.get("events", [])]
        assert int(new.span["endTimeUnixNano"]) >= int(new.span["startTimeUnixNano"])
    by_tool = {s.attrs[A.GEN_AI_TOOL_NAME]: s for s in after}
    assert A.RESULT_TYPE in by_tool["fetch"].attrs
    assert by_tool["page"].attrs[A.RESULT_TRUNCATED] is True
    assert by_tool["lookup"].span["status"]["code"] == 2 and A.GEN_AI_TOOL_CALL_RESULT not in by_tool["lookup"].attrs
    run_span = next(s for s in raw_spans(replayed) if s.attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_INVOKE_AGENT)
    assert {s.parent_span_id for s in after} == {run_span.span_id}
    (run,) = load_tape(replayed).runs
    assert [(s.tool, s.seq, s.args, s.result) for s in run.steps] == [
        (s.tool, s.seq, s.args, s.result) for s in load_tape(tape).runs[0].steps
    ]


def test_an_override_or_a_missing_blob_ends_the_hit_span_as_the_served_result_says(
    recorded: tuple[Path, list[object]],
) -> None:
    tape, _ = recorded
    replayed = tape.with_name("overridden.jsonl")
    overrides = {"fetch": {"title": "other"}}
    with record(replayed), replay(tape, overrides=overrides, allow_unused=True), agent_run("helper"):
        assert search("refund")["query"] == "refund"
        assert fetch("manual") == {"title": "other"}
    spans = {s.attrs[A.GEN_AI_TOOL_NAME]: s for s in steps_of(replayed)}
    assert spans["fetch"].attrs[A.GEN_AI_TOOL_CALL_RESULT] == '{"title":"other"}'
    assert A.RESULT_TYPE not in spans["fetch"].attrs
    for blob in tape.with_name(tape.name + ".blobs").iterdir():
        blob.unlink()
    missing = tape.with_name("missing.jsonl")
    with record(missing), replay(tape, allow_unused=True), agent_run("helper"):
        search("refund")
        search("refund", limit=1)
        fetch("manual")
        with pytest.raises(KeyError):
            lookup("k-1")
        with pytest.raises(Exception, match="shortened when recorded"):
            page(7)
    failed = {s.attrs[A.GEN_AI_TOOL_NAME]: s for s in steps_of(missing)}["page"]
    assert failed.span["status"]["code"] == 2
    assert A.GEN_AI_TOOL_CALL_RESULT not in failed.attrs and A.RESULT_TRUNCATED not in failed.attrs


def test_an_http_hit_span_carries_the_recorded_steps_attributes_and_its_status(tmp_path: Path) -> None:
    """An HTTP step's replay span has what its recording has, ``http.response.status_code`` (read from the
    served answer, as when recorded) included, in the same order."""
    import httpx
    from helpers.rest_server import rest_api

    tape, replayed = tmp_path / "t.jsonl", tmp_path / "replayed.jsonl"
    with rest_api() as api:
        with record(tape), agent_run("rest"):
            httpx.get(api.url + "/items", params={"q": "lamp"})
            httpx.get(api.url + "/missing")
        with record(replayed), replay(tape), agent_run("rest"):
            assert httpx.get(api.url + "/items", params={"q": "lamp"}).status_code == 200
            assert httpx.get(api.url + "/missing").status_code == 404
    before, after = _steps(tape), _steps(replayed)
    assert [s.attrs[A.HTTP_RESPONSE_STATUS_CODE] for s in after] == [200, 404]
    for old, new in zip(before, after, strict=True):
        assert list(new.attrs) == list(old.attrs)
        assert {k: v for k, v in new.attrs.items() if k not in _LIVE} == {
            k: v for k, v in old.attrs.items() if k not in _LIVE
        }
