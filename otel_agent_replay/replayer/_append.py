"""Appending a live call to a recorded run (record mode ``new_episodes``).

The new step joins the recorded run: same run_id, same trace, parented to the
recorded run span, with a seq after the highest recorded one, so the next strict
replay hits it. It is written through a tracer provider of its own whose only
processor is the lossless tape processor, so it never mixes with the replay's spans. That provider (the
OpenTelemetry SDK and the tape exporter) is imported with the first appender: a strict replay never needs it.
"""

from __future__ import annotations

import threading

from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from otel_agent_replay.capture import Capture, capture_result
from otel_agent_replay.conversation import redact_stream
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import Prepared, RunState, StepIds, ToolSpec, record_error, step_attributes
from otel_agent_replay.tape import Run


class AppendedStep:
    """An appended step in flight."""

    def __init__(self, span: trace.Span, spec: ToolSpec, capture: Capture) -> None:
        self.span = span
        self.spec = spec
        self.capture = capture

    def finish(self, result: object) -> None:
        try:
            result = redact_stream(result, self.capture.redactor.redact_text)  # a stream as its assembled text
            captured = capture_result(result, self.capture)
            self.span.set_attribute(A.GEN_AI_TOOL_CALL_RESULT, captured.json)
            if captured.truncated:
                self.span.set_attribute(A.RESULT_TRUNCATED, True)
                self.span.set_attribute(A.RESULT_SHA256, captured.sha256 or "")
        finally:
            self.span.end()

    def fail(self, exc: BaseException) -> None:
        try:
            record_error(self.span, exc, self.capture.redactor)
        finally:
            self.span.end()


class Appender:
    """Writes live steps into the recorded runs of one tape."""

    def __init__(self, tape_path: str, capture: Capture) -> None:
        from opentelemetry.exporter.agent_replay_tape import TapeSpanExporter, TapeSpanProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        self.capture = capture
        self._provider = TracerProvider(resource=Resource.create())
        self._provider.add_span_processor(TapeSpanProcessor(TapeSpanExporter(tape_path)))
        self._tracer = self._provider.get_tracer(A.INSTRUMENTATION_NAME)
        self._next_seq: dict[str, int] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def _ids(self, run: Run, tool: str, parent_step_id: str) -> StepIds:
        with self._lock:
            seq = self._next_seq.get(run.run_id, max((s.seq for s in run.steps), default=0)) + 1
            self._next_seq[run.run_id] = seq
            key = (run.run_id, tool)
            n = self._counts.get(key, sum(1 for s in run.steps if s.tool == tool and "/" not in s.step_id)) + 1
            self._counts[key] = n
        return StepIds(seq=seq, step_id=f"{tool}#{n}", parent_step_id=parent_step_id)

    def start(self, spec: ToolSpec, prep: Prepared, run: Run | None) -> AppendedStep | None:
        """Start the appended step's span inside the recorded run; None without a run."""
        if run is None:
            return None
        ids = self._ids(run, spec.name, prep.ids.parent_step_id)
        recorded = RunState(run.run_id, run.agent_name, INVALID_SPAN, self.capture, None)
        _, attrs = step_attributes(spec, Prepared(recorded, ids, prep.captured, True))
        attrs[A.MODE] = A.MODE_RECORD
        parent = None
        if run.trace_id and run.span_id:
            ctx = SpanContext(int(run.trace_id, 16), int(run.span_id, 16), is_remote=True, trace_flags=TraceFlags(1))
            parent = trace.set_span_in_context(NonRecordingSpan(ctx))
        span = self._tracer.start_span(
            A.tool_span_name(spec.name), context=parent, kind=SpanKind.INTERNAL, attributes=attrs
        )
        return AppendedStep(span, spec, self.capture)

    def close(self) -> None:
        self._provider.shutdown()


__all__ = ["AppendedStep", "Appender"]
