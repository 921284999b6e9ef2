"""A stream still open at its run's end whose end fails is said and counted, never dropped in silence."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_agent_replay import RecordingWarning, agent_run, record, tool
from otel_agent_replay.recorder._routing import ensure_provider


class _Failing(SpanProcessor):
    """The application's own span processor, failing on the spans of one tool (while on)."""

    def __init__(self) -> None:
        self.on = True

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if self.on and span.name == "execute_tool ticker":
            raise OSError("the application's exporter is gone")


@pytest.fixture
def failing() -> Iterator[None]:
    processor = _Failing()
    ensure_provider().add_span_processor(processor)
    yield
    processor.on = False


@tool(side_effect="read_only")
def ticker(n: int) -> Iterator[int]:
    yield from range(n)


def test_a_stream_whose_end_fails_at_the_runs_end_is_warned_and_counted(tape: Path, failing: None) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with record(tape), agent_run("streams", run_id="r-9") as run:
            first, second = ticker(5), ticker(3)
            next(first), next(second)  # both left open: the run's end ends them
    lost = [
        str(w.message)
        for w in seen
        if issubclass(w.category, RecordingWarning) and "ending them failed" in str(w.message)
    ]
    assert len(lost) == 1
    assert lost[0].startswith("run r-9: 2 streamed step(s) were still open when the run ended, and ending them failed")
    assert lost[0].count("'ticker' (OSError: the application's exporter is gone)") == 2
    assert run.steps_lost == 2


def test_streams_ended_cleanly_count_nothing(tape: Path) -> None:
    from otel_agent_replay import load_tape

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordingWarning)  # "still open" (once per tool and process)
        with record(tape), agent_run("streams") as run:
            next(ticker(2))
    assert run.steps_lost == 0
    (recorded,) = load_tape(tape).runs
    assert [s.tool for s in recorded.steps] == ["ticker"]
