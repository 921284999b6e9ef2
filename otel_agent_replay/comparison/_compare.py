"""``compare(a, b)``: a semantic comparison of two runs, behaviour before data.

The order separates what the agent did from what it got: same task; the step tree
(tool names, the order of steps that ran one after the other, causal parents) aligned by
step_id; arguments (already normalised and
redacted at capture); results; error types; side-effect calls; the final output. A
``Policy`` says per JSON path what to ignore, how to normalise, and which lists are
compared without regard to order.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_agent_replay.core import CauseOrigin, DivergenceKind, StepKind, project_settings
from otel_agent_replay.tape import Lineage, Run, Step, Tape, lineage, load_tape

from ._causes import Cause, answered_with_parent, difference_json, explain
from ._diff import ABSENT, Difference
from ._model import model_view

DEFAULT_IGNORE: tuple[str, ...] = (
    "*timestamp*",
    "*_at",
    "*.time",
    "*request_id*",
    "*requestid*",
    "*trace_id*",
    "*span_id*",
    "*usage.*",
    "*input_tokens",
    "*output_tokens",
    "*prompt_tokens",
    "*completion_tokens",
    "*total_tokens",
    # the volatile fields of model requests and answers (capture's VOLATILE_MODEL_FIELDS for call keys)
    "args.user",
    "*tool_call_id",
    "*tool_calls[[]*[]].id",
    "*.created",
    "*system_fingerprint",
)
"""Paths ignored by default: timestamps, request and trace ids, token counts, and the volatile fields of
model calls (the end user, tool-call ids minted per run, ``created``, ``system_fingerprint``). The
``compare_ignore`` list of ``[tool.otel-agent-replay]`` in pyproject.toml adds to it."""

# The order in which kinds are reported: behaviour first, then data.
KIND_ORDER: tuple[DivergenceKind, ...] = (
    DivergenceKind.RUN_COUNT,
    DivergenceKind.TASK,
    DivergenceKind.INPUT,
    DivergenceKind.STEP_MISSING,
    DivergenceKind.STEP_EXTRA,
    DivergenceKind.TOOL,
    DivergenceKind.ORDER,
    DivergenceKind.PARENT,
    DivergenceKind.ARGS,
    DivergenceKind.RESULT,
    DivergenceKind.ERROR,
    DivergenceKind.SIDE_EFFECT,
    DivergenceKind.OUTPUT,
)


@dataclass(frozen=True)
class Policy:
    """How values are compared, per JSON path.

    Paths look like ``args.max_words``, ``result.items[2].id`` or ``output.summary``; a
    pattern (fnmatch style) matches the path itself or ``tool:path`` (``search:result.*``).
    ``ignore`` patterns are skipped (``strict`` patterns win over them); ``normalize``
    maps a pattern to a callable applied to both values before they are compared;
    ``unordered`` maps a pattern to the field that keys its list items (or None to
    compare the list as a multiset).
    """

    ignore: tuple[str, ...] = DEFAULT_IGNORE
    strict: tuple[str, ...] = ()
    normalize: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    unordered: Mapping[str, str | None] = field(default_factory=dict)
    model_volatile: bool = True
    """Model steps are compared without their volatile fields (``capture``'s ``VOLATILE_MODEL_FIELDS``
    in the arguments, ``VOLATILE_MODEL_RESULT_FIELDS`` and ``VOLATILE_RESPONSE_HEADERS`` in the
    answer), and a recorded stream by the answer its events assemble into, not event by event."""

    def _matches(self, patterns: Iterable[str], path: str, tool: str) -> bool:
        scoped = f"{tool}:{path}" if tool else path
        return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(scoped, p) for p in patterns)

    def ignored(self, path: str, tool: str = "") -> bool:
        """Whether differences at this path are ignored."""
        return self._matches(self.ignore, path, tool) and not self._matches(self.strict, path, tool)

    def normalizer(self, path: str, tool: str = "") -> Callable[[Any], Any] | None:
        for pattern, fn in self.normalize.items():
            if self._matches((pattern,), path, tool):
                return fn
        return None

    def list_key(self, path: str, tool: str = "") -> tuple[bool, str | None]:
        for pattern, key in self.unordered.items():
            if self._matches((pattern,), path, tool):
                return True, key
        return False, None


STRICT = Policy(ignore=(), model_volatile=False)
"""A policy that ignores nothing (model steps' volatile fields and raw stream events included)."""


@dataclass(frozen=True, slots=True)
class Forked:
    """One side's run is a fork: of the other side's run (``of_other``) or of another recording."""

    side: str
    """``left`` or ``right``."""
    run_id: str
    lineage: Lineage
    of_other: bool

    def __str__(self) -> str:
        other = "left" if self.side == "right" else "right"
        whose = f"the {other} run" if self.of_other else f"run {self.lineage.run_id}"
        text = f"{self.side} run {self.run_id} is a fork of {whose}"
        if self.lineage.tape:
            text += f" ({self.lineage.tape})"
        if self.lineage.step_id:
            text += f" at step {self.lineage.step_id}"
        if self.lineage.edits:
            text += f", edit {self.lineage.edit_text()}"
        if self.lineage.diverged_at and self.lineage.diverged_at != self.lineage.step_id:
            text += f"; it diverged at {self.lineage.diverged_at}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"side": self.side, "run_id": self.run_id, "of_other": self.of_other, **self.lineage.to_json()}


@dataclass(frozen=True)
class Comparison:
    """The differences between two runs (or two tapes, run by run), behaviour first; and the same
    differences as causes, each with the consequences it carries (``causes``)."""

    left: str
    right: str
    differences: tuple[Difference, ...]
    causes: tuple[Cause, ...] = ()
    """The causal diff: each cause (the first difference in what the agent was given) with the later
    differences that carry it, in the order the steps ran. Every difference is in exactly one cause."""
    forks: tuple[Forked, ...] = ()
    """The runs of either side that are forks, and of what."""
    answered: tuple[str, ...] = ()
    """Steps one side has and the other does not because their parent was answered without running (a
    replayed or edited tool makes no child steps): not differences."""

    @property
    def first_cause(self) -> Cause | None:
        """The first cause, or None."""
        return self.causes[0] if self.causes else None

    @property
    def same(self) -> bool:
        """True when nothing diverged (under the policy)."""
        return not self.differences

    @property
    def first(self) -> Difference | None:
        """The first difference in report order, or None."""
        return self.differences[0] if self.differences else None

    @property
    def divergences(self) -> tuple[Difference, ...]:
        """The same as ``differences`` (its name before 0.2; ``--json`` still says ``divergences``)."""
        return self.differences

    def of_kind(self, kind: DivergenceKind | str) -> tuple[Difference, ...]:
        """The differences of one kind."""
        return tuple(d for d in self.differences if d.kind == kind)

    def __bool__(self) -> bool:
        return not self.same

    def headline(self) -> str:
        """``1 cause (4 consequences)`` or ``no divergence``."""
        if self.same:
            return "no divergence"
        consequences = sum(c.count for c in self.causes)
        return f"{len(self.causes)} cause(s), {consequences} consequence(s); {len(self.differences)} difference(s)"

    def __str__(self) -> str:
        lines = [f"{self.left} → {self.right}: {self.headline()}"]
        lines.extend(f"  {f}" for f in self.forks)
        for cause in self.causes:
            lines.extend(f"  {line}" for line in str(cause).splitlines())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data for machines: the causes first, each with its consequences; then every
        difference flat (``divergences``, as before)."""
        return {
            "left": self.left,
            "right": self.right,
            "same": self.same,
            "forks": [f.to_json() for f in self.forks],
            "causes": [c.to_json() for c in self.causes],
            "answered": list(self.answered),
            "divergences": [difference_json(d) for d in self.differences],
        }


RunSource = Run | Tape | str | os.PathLike[str]


def _runs(source: RunSource) -> tuple[tuple[Run, ...], str]:
    if isinstance(source, Run):
        return (source,), f"run {source.run_id}"
    tape = source if isinstance(source, Tape) else load_tape(source)
    return tape.runs, tape.path


def compare(a: RunSource, b: RunSource, policy: Policy | None = None) -> Comparison:
    """Compare two runs (recorded vs replayed, version A vs B); tapes are compared run by run."""
    if policy is None:
        extra = project_settings().compare_ignore
        policy = Policy(ignore=DEFAULT_IGNORE + extra) if extra else Policy()
    left_runs, left_name = _runs(a)
    right_runs, right_name = _runs(b)
    found: list[Difference] = []
    causes: list[Cause] = []
    answered: list[str] = []
    if len(left_runs) != len(right_runs):
        runs = _diff(DivergenceKind.RUN_COUNT, "", "runs", len(left_runs), len(right_runs))
        found.append(runs)
        causes.append(Cause(CauseOrigin.RUNS, "", (runs,)))
    for left, right in zip(left_runs, right_runs, strict=False):
        skip = answered_with_parent(left, right)
        diffs = [d for d in _compare_runs(left, right, policy) if not (d.step in skip and d.kind in _PRESENCE)]
        found.extend(diffs)
        causes.extend(explain(left, right, diffs, _edited(left, right)))
        answered.extend(sorted(skip))
    rank = {kind: i for i, kind in enumerate(KIND_ORDER)}
    ordered = sorted(enumerate(found), key=lambda item: (rank.get(item[1].kind, len(rank)), item[0]))
    forks = _forks(left_runs, right_runs)
    return Comparison(left_name, right_name, tuple(d for _, d in ordered), tuple(causes), forks, tuple(answered))


_PRESENCE = frozenset({DivergenceKind.STEP_MISSING, DivergenceKind.STEP_EXTRA})


def _edited(left: Run, right: Run) -> set[str]:
    """The steps an edit answered, on either side (a fork's lineage)."""
    found: set[str] = set()
    for run in (left, right):
        seen = lineage(run)
        if seen is not None:
            found.update(seen.edits)
    return found


def _forks(left_runs: tuple[Run, ...], right_runs: tuple[Run, ...]) -> tuple[Forked, ...]:
    found: list[Forked] = []
    left_ids = {r.run_id for r in left_runs}
    right_ids = {r.run_id for r in right_runs}
    for side, runs, others in (("left", left_runs, right_ids), ("right", right_runs, left_ids)):
        for run in runs:
            seen = lineage(run)
            if seen is not None:
                found.append(Forked(side, run.run_id, seen, seen.run_id in others))
    return tuple(found)


def _compare_runs(left: Run, right: Run, policy: Policy) -> list[Difference]:
    out: list[Difference] = []
    if left.task != right.task and not policy.ignored("task"):
        out.append(_diff(DivergenceKind.TASK, "", "task", left.task, right.task))
    out.extend(_values(DivergenceKind.INPUT, "", "input", left.input, right.input, policy, ""))
    right_steps = {s.step_id: s for s in right.steps}
    left_ids = {s.step_id for s in left.steps}
    for step in left.steps:
        other = right_steps.get(step.step_id)
        if other is None:
            out.append(_diff(DivergenceKind.STEP_MISSING, step.step_id, "", _step_face(step), ABSENT))
            continue
        out.extend(_compare_steps(step, other, policy))
    for step in right.steps:
        if step.step_id not in left_ids:
            out.append(_diff(DivergenceKind.STEP_EXTRA, step.step_id, "", ABSENT, _step_face(step)))
    if not policy.ignored("order"):
        out.extend(order_differences(left.steps, right.steps))
    out.extend(_values(DivergenceKind.OUTPUT, "", "output", left.output, right.output, policy, ""))
    return out


def _before(first: Step, second: Step) -> bool:
    """``first`` ended before ``second`` started: they ran one after the other (happens-before)."""
    return first.end_ns <= second.start_ns and first.end_ns > 0


def order_differences(left: Iterable[Step], right: Iterable[Step]) -> list[Difference]:
    """``order`` differences: two steps (aligned by step_id) that ran one after the other on the
    left ran the other way round on the right. Steps that overlapped in time on either side are
    concurrent (a gather, a thread pool, a step and the steps inside it) and never differ in order.
    """
    right_by_id = {s.step_id: s for s in right}
    common = sorted((s for s in left if s.step_id in right_by_id), key=lambda s: (s.start_ns, s.seq))
    out: list[Difference] = []
    for j, later in enumerate(common):
        later_right = right_by_id[later.step_id]
        for earlier in common[:j]:
            earlier_right = right_by_id[earlier.step_id]
            if _before(earlier, later) and _before(later_right, earlier_right):
                out.append(
                    _diff(
                        DivergenceKind.ORDER,
                        later.step_id,
                        "order",
                        f"{earlier.step_id} before {later.step_id}",
                        f"{later.step_id} before {earlier.step_id}",
                    )
                )
    return out


def _step_face(step: Step) -> dict[str, Any]:
    return {"tool": step.tool, "seq": step.seq, "args": step.args}


def _compare_steps(left: Step, right: Step, policy: Policy) -> list[Difference]:
    sid = left.step_id
    out: list[Difference] = []
    if (left.kind, left.tool) != (right.kind, right.tool):
        out.append(_diff(DivergenceKind.TOOL, sid, "tool", left.tool, right.tool))
        return out
    tool = left.tool
    left_args, left_result, right_args, right_result = left.args, left.result, right.args, right.result
    if policy.model_volatile and left.kind == StepKind.LLM.value:
        left_args, left_result = model_view(left)
        right_args, right_result = model_view(right)
    if left.parent_step_id != right.parent_step_id and not policy.ignored("parent_step_id", tool):
        out.append(_diff(DivergenceKind.PARENT, sid, "parent_step_id", left.parent_step_id, right.parent_step_id))
    out.extend(_values(DivergenceKind.ARGS, sid, "args", left_args, right_args, policy, tool))
    left_error = left.error.type if left.error else None
    right_error = right.error.type if right.error else None
    if left_error != right_error:
        out.append(_diff(DivergenceKind.ERROR, sid, "error", left_error, right_error))
    elif left.error is None:
        out.extend(_values(DivergenceKind.RESULT, sid, "result", left_result, right_result, policy, tool))
    if left.side_effect != right.side_effect and not policy.ignored("side_effect", tool):
        out.append(_diff(DivergenceKind.SIDE_EFFECT, sid, "side_effect", left.side_effect, right.side_effect))
    return out


def _diff(kind: DivergenceKind, step: str, path: str, left: Any, right: Any) -> Difference:
    return Difference(path, left, right, kind, step)


def _values(
    kind: DivergenceKind, step: str, path: str, left: Any, right: Any, policy: Policy, tool: str
) -> list[Difference]:
    if policy.ignored(path, tool):
        return []
    normalize = policy.normalizer(path, tool)
    if normalize is not None:
        left, right = normalize(left), normalize(right)
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[Difference] = []
        for key in sorted(left.keys() | right.keys()):
            out.extend(
                _values(kind, step, f"{path}.{key}", left.get(key, ABSENT), right.get(key, ABSENT), policy, tool)
            )
        return out
    if isinstance(left, list) and isinstance(right, list):
        unordered, key_field = policy.list_key(path, tool)
        if unordered:
            left, right = _sorted_items(left, key_field), _sorted_items(right, key_field)
        out = []
        for i in range(max(len(left), len(right))):
            a = left[i] if i < len(left) else ABSENT
            b = right[i] if i < len(right) else ABSENT
            out.extend(_values(kind, step, f"{path}[{i}]", a, b, policy, tool))
        return out
    if type(left) is type(right) and left == right:
        return []
    return [Difference(path, left, right, kind, step)]


def _sorted_items(items: list[Any], key_field: str | None) -> list[Any]:
    def key(item: Any) -> bytes:
        if key_field is not None and isinstance(item, dict):
            return orjson.dumps(item.get(key_field), option=orjson.OPT_SORT_KEYS)
        return orjson.dumps(item, option=orjson.OPT_SORT_KEYS)

    return sorted(items, key=key)
