"""Load a tape: our OTLP JSON Lines, the Collector's file export, OTLP JSON, or Jaeger JSON.

``load_tape(path)`` reads a file of finished spans and builds a ``Tape`` (runs → steps);
``iter_spans(path)`` is the layer below it: every span of the file, GenAI or not, as a
``SpanRecord``. The format is detected from the file itself and loading is strict: see
``tape_read`` (formats, strict JSON, the torn last line), ``span_decode`` and ``jaeger_decode``
(one span each). This module turns span records into runs and steps:

- a span of ours (``agent_replay.*`` attributes) carries its run, seq, step id and call key;
- a foreign GenAI span (``execute_tool``, or ``chat`` marked as a model step) joins the run of
  its ``run_id``, else the (foreign) run span nearest above it, else a run per trace; its seq, step id and
  call key are computed here. A foreign tool span directly around a step of ours with the same
  tool is the same call seen by a second instrumentation, and a foreign span anywhere inside a
  step of ours (an in-process MCP server's own ``tools/call`` span) ran within that recorded call:
  neither is a step, and neither is warned about. Any other foreign tool span inside a run of ours is
  the application's own telemetry of a call no capture point saw (``_foreign``): with arguments, a step
  of that run that a replay serves when asked (a double) and never counts unused; without, skipped in
  silence;
- a foreign ``invoke_agent`` span (a framework's own view of the agent, such as google-adk's) above
  or inside a run of ours is not a run: its spans belong to that run. Elsewhere it is a run;
- any other tool or model span without recorded arguments cannot be replayed: it is skipped with a
  ``TapeWarning``.

Arguments and results stay the JSON text they are in the span (``model.Step`` parses them on
access); the garbage collector is paused during the load.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from operator import attrgetter
from typing import Any, Final

from otel_agent_replay.capture import Redactor, canonical_json
from otel_agent_replay.core import MAX_LINE_BYTES, StepKind
from otel_agent_replay.core.attributes import (
    CALL_KEY,
    FUNCTION,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_NAME,
    KIND,
    MODEL_ARGUMENTS,
    OP_CHAT,
    OP_EMBEDDINGS,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    RUN_ID,
    SEQ,
    STEP_ID,
)

from ._build import (
    complete_run,
    foreign_call_key,
    incomplete_run,
    make_step,
    name_suffix,
    text_or_none,
)
from ._foreign import RecordedSteps, SpanKey, ancestor_run, in_our_run, inside
from ._lazy import lazy_step
from ._read import TapeReader, paused_gc
from ._redacted import redact_record
from ._span import SpanRecord, int_or_none
from ._values import Run, Step, Tape

# The kinds as the plain strings a tape holds (an enum member's attribute lookup is slower).
_TOOL: Final = StepKind.TOOL.value
_LLM: Final = StepKind.LLM.value

__all__ = ["SpanRecord", "iter_spans", "load_tape"]


def load_tape(
    path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES, redactor: Redactor | None = None
) -> Tape:
    """Load a tape file (any supported format, detected automatically) into a ``Tape``.

    ``redactor``: every span's name, attributes and error read through it (``clean_attribute``), as
    the commands that print, store or compare a tape do: a tape another tool wrote may hold secrets.

    Raises ``TapeNotFoundError`` when the file does not exist and ``TapeFormatError``
    (message ``file:line: what is wrong; the fix``) when it is malformed. An unterminated last
    line that does not parse is skipped with a ``TapeWarning`` and listed in ``Tape.warnings``.
    An empty file is a tape without runs. Only a regular file is read (a FIFO, a device, a
    symlink loop are refused at once), and a line longer than ``max_line_bytes`` is an error.
    """
    reader = TapeReader(os.fspath(path), max_line_bytes)
    with paused_gc():
        runs = _RunBuilder(reader, redactor).build()
    return Tape(path=reader.path, runs=runs, warnings=tuple(reader.warnings))


def iter_spans(
    path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES, redactor: Redactor | None = None
) -> Iterator[SpanRecord]:
    """Every span of a trace file, in file order, whatever its kind (GenAI or not).

    The lower layer of ``load_tape``: same format detection, same strictness, same warnings, the same
    ``redactor``.
    """
    spans = TapeReader(os.fspath(path), max_line_bytes).spans()
    if redactor is None:
        return spans
    return (redact_record(record, redactor) for record in spans)


# --- spans → runs and steps ------------------------------------------------------


class _StepAwaitingRun:
    """A step span that lacks some of our attributes (a foreign span): finished once its run is known."""

    __slots__ = ("args_json", "index", "kind", "record", "seq", "start_ns", "tool")

    def __init__(self, index: int, kind: str, record: SpanRecord, tool: str, args_json: str, seq: Any) -> None:
        self.index = index
        self.kind = kind
        self.record = record
        self.tool = tool
        self.args_json = args_json
        self.seq = int_or_none(seq)
        self.start_ns = record.start_ns


class _RunParts:
    """What is known about one run while the file is read."""

    __slots__ = ("first", "pending", "record", "steps")

    def __init__(self, first: int) -> None:
        self.first = first
        self.record: SpanRecord | None = None
        self.steps: list[Step] = []
        self.pending: list[_StepAwaitingRun] = []


class _RunBuilder:
    """Sorts the spans of one file into runs while it is read, then builds the runs."""

    def __init__(self, reader: TapeReader, redactor: Redactor | None = None) -> None:
        self.reader = reader
        self.redactor = redactor
        self.runs: dict[str, _RunParts] = {}
        self.parents: dict[SpanKey, str] = {}
        self.run_of_span: dict[SpanKey, str] = {}
        self.orphans: list[_StepAwaitingRun] = []  # foreign steps: their run is found once every span is read
        self.step_lines: dict[SpanKey, int] = {}
        self.our_steps: set[SpanKey] = set()  # the step spans recorded by otel-agent-replay
        self.argless: list[tuple[SpanRecord, str]] = []  # foreign tool or model spans without arguments
        self.foreign_runs: list[tuple[int, SpanKey, SpanRecord]] = []  # invoke_agent spans not of ours
        self.run_records: dict[str, SpanRecord | None] | None = None  # run id → its run span, once settled

    def build(self) -> tuple[Run, ...]:
        """Read every span, then the runs in order of first appearance."""
        index = 0
        add = self._add
        redactor = self.redactor
        for records in self.reader.batches():
            for record in records:
                index += 1
                add(index, record if redactor is None else redact_record(record, redactor))
        self._settle_foreign_runs()
        recorded = None
        if self.argless or self.orphans:  # the foreign spans' checks; a tape of ours alone has none
            recorded = RecordedSteps(step for parts in self.runs.values() for step in parts.steps)
        without_arguments = sum(
            1
            for record, tool in self.argless
            if recorded is not None and not self._a_view(recorded, record, tool) and not self._in_our_run(record)
        )
        if without_arguments:
            self.reader.warn(
                f"{self.reader.path}: skipped {without_arguments} tool or model span(s) without recorded "
                f"arguments ({GEN_AI_TOOL_CALL_ARGUMENTS} / {MODEL_ARGUMENTS}): they cannot be replayed. "
                f"Turn on content capture in the instrumentation that wrote them, or record with "
                f"otel-agent-replay."
            )
        if recorded is not None:
            self._place_orphans(recorded)
        out: list[Run] = []
        for run_id, parts in sorted(self.runs.items(), key=lambda item: item[1].first):
            steps = _ordered_steps(run_id, parts)
            if parts.record is not None:
                out.append(complete_run(run_id, parts.record, steps))
            else:
                out.append(incomplete_run(run_id, steps))
        return tuple(out)

    def _parts(self, run_id: str, index: int) -> _RunParts:
        parts = self.runs.get(run_id)
        if parts is None:
            parts = self.runs[run_id] = _RunParts(index)
        return parts

    def _add(self, index: int, record: SpanRecord) -> None:
        key = record.trace_id + record.span_id
        self.parents[key] = record.parent_span_id
        attrs = record.attributes
        op = attrs.get(GEN_AI_OPERATION_NAME)
        if op is None:
            return
        if op == OP_EXECUTE_TOOL:
            kind = _TOOL
            args = attrs.get(GEN_AI_TOOL_CALL_ARGUMENTS)
            tool = attrs.get(GEN_AI_TOOL_NAME)
            if tool is None:
                tool = name_suffix(record.name, OP_EXECUTE_TOOL)
        elif op in (OP_CHAT, OP_EMBEDDINGS) and attrs.get(KIND) == _LLM:
            kind = _LLM
            args = attrs.get(MODEL_ARGUMENTS)
            tool = attrs.get(FUNCTION)
            if tool is None:
                tool = name_suffix(record.name, OP_CHAT)
        elif op == OP_INVOKE_AGENT:
            if RUN_ID in attrs:
                self._add_run(index, key, record)
            else:
                self.foreign_runs.append((index, key, record))  # a run, unless a run of ours is above or below
            return
        else:
            return
        if args is None:
            self.argless.append((record, tool if type(tool) is str else str(tool)))
            return
        self._add_step(index, key, record, kind, tool if type(tool) is str else str(tool), args)

    def _add_run(self, index: int, key: SpanKey, record: SpanRecord) -> None:
        run_id = text_or_none(record.attributes.get(RUN_ID)) or record.span_id
        parts = self._parts(run_id, index)
        if parts.record is not None:
            raise self.reader.error(
                f"a second run span for run_id {run_id!r}{_first_at(parts.record.line)}: a "
                f"run is recorded once; remove the duplicate, or record the retry as a new run",
                record.line,
            )
        parts.record = record
        self.run_of_span[key] = run_id

    def _add_step(self, index: int, key: SpanKey, record: SpanRecord, kind: str, tool: str, args: Any) -> None:
        step_lines = self.step_lines
        known = len(step_lines)
        step_lines.setdefault(key, record.line)  # one look-up: a key already there is not replaced
        if len(step_lines) == known:
            raise self.reader.error(
                f"step span {record.span_id} of trace {record.trace_id} appears twice"
                f"{_first_at(step_lines[key])}; remove the duplicate or re-record the tape",
                record.line,
            )
        if type(args) is not str:
            args = canonical_json(args)
        attrs = record.attributes
        step_run = attrs.get(RUN_ID)
        seq = attrs.get(SEQ)
        step_id = attrs.get(STEP_ID)
        call_key = attrs.get(CALL_KEY)
        if type(step_run) is str and step_run and type(seq) is int and type(step_id) is str and type(call_key) is str:
            # Recorded by otel-agent-replay: everything is on the span.
            self.our_steps.add(key)
            self._parts(step_run, index).steps.append(
                lazy_step(kind, tool, args, seq, step_id, call_key, step_run, record)
            )
            return
        pending = _StepAwaitingRun(index, kind, record, tool, args, seq)
        if type(step_run) is str and step_run:
            self._parts(step_run, index).pending.append(pending)
        else:
            self.orphans.append(pending)

    def _settle_foreign_runs(self) -> None:
        """A foreign ``invoke_agent`` span above or below a run of ours is that run's (its spans join it);
        any other is a run of its own, as every run span is."""
        if not self.foreign_runs:
            return
        parents, run_of_span = self.parents, self.run_of_span
        below: dict[SpanKey, str] = {}  # a span above a run of ours → that run (the nearest one wins)
        for key, run_id in list(run_of_span.items()):
            trace_id, span_id, hops = key[:32], parents.get(key, ""), 0
            while span_id and hops <= len(parents):
                up = trace_id + span_id
                below.setdefault(up, run_id)
                span_id = parents.get(up, "")
                hops += 1
        for index, key, record in self.foreign_runs:
            ours = ancestor_run(record, run_of_span, parents) or below.get(key)
            if ours is not None:
                run_of_span[key] = ours
            else:
                self._add_run(index, key, record)

    def _inside_our_step(self, record: SpanRecord) -> bool:
        """Whether a span ran within a step recorded by otel-agent-replay (that step is what replays)."""
        return inside(record, self.our_steps, self.parents)

    def _in_our_run(self, record: SpanRecord) -> bool:
        """Whether a foreign span is inside a run recorded by otel-agent-replay (see ``_foreign``)."""
        if self.run_records is None:  # asked once every span is read and the foreign runs are settled
            self.run_records = {run_id: parts.record for run_id, parts in self.runs.items()}
        return in_our_run(record, self.run_of_span, self.parents, self.run_records)

    def _a_view(self, recorded: RecordedSteps, record: SpanRecord, tool: str) -> bool:
        """Whether a foreign step span is another view of a step of ours: directly around it with the same
        tool, or anywhere inside it."""
        return recorded.has_second_view(record, tool) or self._inside_our_step(record)

    def _place_orphans(self, recorded: RecordedSteps) -> None:
        """Foreign steps without a run_id join the run span above them, else a run per trace."""
        if not self.orphans:
            return
        for pending in self.orphans:
            if self._a_view(recorded, pending.record, pending.tool):
                continue  # the same call, seen by a second instrumentation, or a part of a recorded call
            run_id = ancestor_run(pending.record, self.run_of_span, self.parents) or pending.record.trace_id
            parts = self._parts(run_id, pending.index)
            parts.first = min(parts.first, pending.index)
            parts.pending.append(pending)


_seq_order = attrgetter("seq", "start_ns")


def _ordered_steps(run_id: str, parts: _RunParts) -> tuple[Step, ...]:
    """A run's steps in seq order; foreign steps get their seq, step_id and call key here."""
    steps = parts.steps
    if not parts.pending:
        steps.sort(key=_seq_order)
        return tuple(steps)
    pending = parts.pending
    top = max((step.seq for step in steps), default=0)
    top = max((p.seq for p in pending if p.seq is not None), default=top)
    unnumbered = sorted((p for p in pending if p.seq is None), key=lambda p: (p.start_ns, p.index))
    for offset, p in enumerate(unnumbered, start=1):
        p.seq = top + offset  # foreign steps: numbered after any recorded seq, in start-time order
    mixed: list[Step | _StepAwaitingRun] = [*steps, *pending]
    mixed.sort(key=_seq_order)
    calls: dict[str, int] = {}
    out: list[Step] = []
    for item in mixed:
        nth = calls[item.tool] = calls.get(item.tool, 0) + 1
        if isinstance(item, Step):
            out.append(item)
            continue
        attrs = item.record.attributes
        call_key = attrs.get(CALL_KEY)
        if type(call_key) is not str or not call_key:
            call_key = foreign_call_key(item.tool, item.args_json)
        seq = item.seq
        assert seq is not None  # numbered above
        step_id = text_or_none(attrs.get(STEP_ID)) or f"{item.tool}#{nth}"
        out.append(make_step(item.kind, item.tool, item.args_json, seq, step_id, call_key, run_id, item.record))
    return tuple(out)


def _first_at(line: int) -> str:
    return f" (the first on line {line})"
