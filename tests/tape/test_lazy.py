"""A loaded step fills its rarely read fields on first read (``tape._lazy``): the same value as ``make_step``'s."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from pathlib import Path

import pytest

from otel_agent_replay import agent_run, load_tape, record, tool
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Step, iter_spans
from otel_agent_replay.tape._build import make_step
from otel_agent_replay.tape._lazy import LazyStep, lazy_step
from otel_agent_replay.tape._span import SpanRecord


@tool
def lookup(order: int) -> dict[str, object]:
    """A read of an order, failing on an odd one."""
    if order % 2:
        raise LookupError(f"order {order} is closed")
    return {"order": order, "status": "open", "note": "déjà vu"}


def _tape(path: Path) -> Path:
    with record(path), agent_run("lazy"):
        for order in range(4):
            with contextlib.suppress(LookupError):
                lookup(order=order)
    return path


def _made(record_: SpanRecord) -> Step:
    """What the loader made before ``LazyStep``: ``make_step`` of the span, every field at once."""
    attrs = record_.attributes
    return make_step(
        attrs[A.KIND],
        attrs[A.GEN_AI_TOOL_NAME],
        attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS],
        attrs[A.SEQ],
        attrs[A.STEP_ID],
        attrs[A.CALL_KEY],
        attrs[A.RUN_ID],
        record_,
    )


def test_a_loaded_step_has_the_fields_make_step_gives(tmp_path: Path) -> None:
    path = _tape(tmp_path / "t.jsonl")
    steps = load_tape(path).runs[0].steps
    made = [_made(r) for r in iter_spans(path) if r.attributes.get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL]
    assert [type(s) for s in steps] == [LazyStep] * 4
    assert [s.error is not None for s in steps] == [False, True, False, True]
    for step, expected in zip(steps, made, strict=True):
        assert step == expected and expected == step and hash(step) == hash(expected)
        assert dataclasses.astuple(step) == dataclasses.astuple(expected)
        assert repr(step) == repr(expected)
    assert steps[0].result == {"order": 0, "status": "open", "note": "déjà vu"}
    assert steps[1].error is not None and steps[1].error.type == "builtins.LookupError"


def test_each_field_read_first_gives_the_made_value(tmp_path: Path) -> None:
    path = _tape(tmp_path / "t.jsonl")
    made = next(_made(r) for r in iter_spans(path) if r.attributes.get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL)
    for field in dataclasses.fields(Step):
        step = load_tape(path).runs[0].steps[0]
        assert getattr(step, field.name) == getattr(made, field.name), field.name


def test_a_lazy_step_stays_frozen_and_knows_its_fields(tmp_path: Path) -> None:
    step = load_tape(_tape(tmp_path / "t.jsonl")).runs[0].steps[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.result_json = "{}"  # type: ignore[misc]  # a field not read yet
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.tool = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="no attribute 'resutl_json'"):
        step.resutl_json  # type: ignore[attr-defined]  # noqa: B018
    changed = dataclasses.replace(step, seq=9)
    assert (changed.seq, changed.result_json, changed.tool) == (9, step.result_json, step.tool)


def test_threads_reading_one_step_at_once_see_one_value(tmp_path: Path) -> None:
    path = _tape(tmp_path / "t.jsonl")
    record_ = next(r for r in iter_spans(path) if r.attributes.get(A.SEQ) == 1)
    expected = _made(record_)
    attrs = record_.attributes
    for _ in range(20):
        step = lazy_step(
            attrs[A.KIND],
            attrs[A.GEN_AI_TOOL_NAME],
            attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS],
            1,
            attrs[A.STEP_ID],
            attrs[A.CALL_KEY],
            attrs[A.RUN_ID],
            record_,
        )
        seen: list[object] = []
        start = threading.Barrier(4)

        def read(step: Step = step, start: threading.Barrier = start, seen: list[object] = seen) -> None:
            start.wait()
            seen.append((step.result_json, step.error, step.run_id, step.end_ns))

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [(expected.result_json, expected.error, expected.run_id, expected.end_ns)] * 4
