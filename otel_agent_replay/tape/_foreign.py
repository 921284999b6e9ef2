"""How spans of other instrumentation (an MCP SDK's, a framework's own such as google-adk's) stand to the
steps and runs otel-agent-replay recorded, for the loader.

A run recorded by otel-agent-replay holds the calls its capture points saw: those are what a replay
serves. A tool or model span another instrumentation wrote inside such a run is that application's own
telemetry of a call (google-adk's ``execute_tool`` around a plain function tool: with arguments when its
content capture is on, without them when it is off). With arguments it is a step of the run, as any
span with ``gen_ai.tool.call.arguments`` is (a double replays it), but no capture point asks for it in
a replay, so it never counts as unused (``telemetry_step``): otherwise every strict replay of such a tape
would end ``TapeUnused``. Without arguments it is skipped in silence (the warning about spans without
arguments is for tapes other tools wrote: there they were meant as steps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from otel_agent_replay.core.attributes import RUN_ID

from ._span import SpanRecord
from ._values import Run, Step

SpanKey = str
"""Trace id + span id: 32 + 16 hex digits (a str, unlike a tuple, is no work for the GC)."""


class RecordedSteps:
    """Where the steps recorded by otel-agent-replay are: (trace, span, tool) and (trace, parent, tool)."""

    __slots__ = ("by_parent", "by_span")

    def __init__(self, steps: Iterable[Step]) -> None:
        self.by_span: set[tuple[str, str, str]] = set()
        self.by_parent: set[tuple[str, str, str]] = set()
        for step in steps:
            self.by_span.add((step.trace_id, step.span_id, step.tool))
            self.by_parent.add((step.trace_id, step.parent_span_id, step.tool))

    def has_second_view(self, record: SpanRecord, tool: str) -> bool:
        """Whether a foreign tool span is another instrumentation's view of a step we recorded.

        An application instrumented twice (a framework's GenAI instrumentation and ``@tool``)
        writes two nested ``execute_tool`` spans for one call; only ours is a step. Spans of the
        same tool that are directly parent and child are taken to be one call.
        """
        return (record.trace_id, record.span_id, tool) in self.by_parent or (
            record.trace_id,
            record.parent_span_id,
            tool,
        ) in self.by_span


def ancestor_run(record: SpanRecord, run_of_span: Mapping[SpanKey, str], parents: Mapping[SpanKey, str]) -> str | None:
    """The run span nearest above a span in its trace (through spans of any kind)."""
    trace_id = record.trace_id
    span_id = record.parent_span_id
    hops = 0
    while span_id and hops <= len(parents):
        key = trace_id + span_id
        run_id = run_of_span.get(key)
        if run_id is not None:
            return run_id
        span_id = parents.get(key, "")
        hops += 1
    return None


def inside(record: SpanRecord, keys: set[SpanKey], parents: Mapping[SpanKey, str]) -> bool:
    """Whether one of the spans ``keys`` is above ``record`` in its trace."""
    if not keys:
        return False
    trace_id, span_id, hops = record.trace_id, record.parent_span_id, 0
    while span_id and hops <= len(parents):
        key = trace_id + span_id
        if key in keys:
            return True
        span_id = parents.get(key, "")
        hops += 1
    return False


def in_our_run(
    record: SpanRecord,
    run_of_span: Mapping[SpanKey, str],
    parents: Mapping[SpanKey, str],
    run_records: Mapping[str, SpanRecord | None],
) -> bool:
    """Whether a foreign span lies inside a run recorded by otel-agent-replay (its run span, ours, carries
    the run id), through any spans between (a framework's own ``invoke_agent`` above or inside the run)."""
    if RUN_ID in record.attributes:
        return False  # a span that names its run is placed by that name
    run_id = ancestor_run(record, run_of_span, parents)
    run = run_records.get(run_id) if run_id is not None else None
    return run is not None and RUN_ID in run.attributes


def telemetry_step(run: Run, step: Step) -> bool:
    """Whether a step of a run recorded by otel-agent-replay came from another instrumentation's span (it
    names no run of its own): served when a double asks for it, never counted unused."""
    return RUN_ID in run.attributes and RUN_ID not in step.attributes


__all__ = ["RecordedSteps", "SpanKey", "ancestor_run", "in_our_run", "inside", "telemetry_step"]
