"""The causal diff: which differences are causes, and which are their consequences.

A cause is the first difference in what the agent was given: an edited step's result, a tool result
or a model answer that differs for the same question, an argument the code changed, the run's input.
A later difference is a consequence of a cause when it carries it, by data: the changed value (or a
value a model wrote from it) appears in the later difference's new value; a step whose input carried
a cause has its differing output counted under the same cause, and so does a step inside a step that
is part of a cause (a tool's own HTTP call, whose answer differs as the tool's result does).
Structural differences (a step one side made and the other did not) have no data: they go under the
cause of their causal parent, else under the latest cause before them, else they are causes of their
own. The rule, and where it can be
wrong, is in ``docs/design.md`` ("Reading a change").
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_agent_replay.core import Carried, CauseOrigin, DivergenceKind, StepKind
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Run, Step

from ._diff import ABSENT, Difference, short

_MIN_TEXT = 4
"""A string shorter than this is not looked for inside another (``"ok"``, ``"1"`` are everywhere)."""

_STRUCTURE = frozenset(
    {
        DivergenceKind.STEP_MISSING,
        DivergenceKind.STEP_EXTRA,
        DivergenceKind.TOOL,
        DivergenceKind.ORDER,
        DivergenceKind.PARENT,
        DivergenceKind.SIDE_EFFECT,
    }
)
_OUTCOME = frozenset({DivergenceKind.RESULT, DivergenceKind.ERROR})


@dataclass(frozen=True, slots=True)
class Consequence:
    """A difference that follows from its cause, and how (``carried``)."""

    difference: Difference
    carried: Carried

    def to_json(self) -> dict[str, Any]:
        return {**difference_json(self.difference), "carried": self.carried.value}


@dataclass(frozen=True, slots=True)
class Cause:
    """One cause: its own differences (one step's, or the run's), and the consequences it carries."""

    origin: CauseOrigin
    step: str
    """The step it is about ("" for the run's input, output or run count)."""
    differences: tuple[Difference, ...]
    consequences: tuple[Consequence, ...] = ()

    @property
    def head(self) -> Difference:
        """The cause's first difference."""
        return self.differences[0]

    @property
    def count(self) -> int:
        """How many consequences it has."""
        return len(self.consequences)

    def describe(self) -> str:
        """``edit get_weather#1 result.sky: "sunny" → "rainy"`` (and how many more of its own)."""
        what = "; ".join(f"{d.path or d.kind.value}: {short(d.left)} → {short(d.right)}" for d in self.differences[:3])
        more = f" (and {len(self.differences) - 3} more)" if len(self.differences) > 3 else ""
        where = f"{self.step} " if self.step else ""
        return f"{self.origin.value} {where}{what}{more}"

    def __str__(self) -> str:
        lines = [f"cause: {self.describe()}"]
        if self.consequences:
            lines.append(f"  {self.count} consequence(s):")
            lines.extend(f"    [{c.carried.value}] {c.difference}" for c in self.consequences)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        head = difference_json(self.head)
        return {
            **head,
            "origin": self.origin.value,
            "differences": [difference_json(d) for d in self.differences],
            "consequence_count": self.count,
            "consequences": [c.to_json() for c in self.consequences],
        }


def difference_json(d: Difference) -> dict[str, Any]:
    """One difference as plain JSON data (``diff --json``'s entries)."""
    return {"kind": d.kind.value, "step": d.step, "path": d.path, "left": plain(d.left), "right": plain(d.right)}


def plain(value: Any) -> Any:
    return None if value is ABSENT else value


# --- carrying: does a new value hold a changed one? ----------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")


def _parsed_text(value: Any) -> str | None:
    """A string holding a JSON object or array, as canonical JSON text (what agents paste into messages)."""
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        return _text(orjson.loads(value))
    except orjson.JSONDecodeError:
        return None


def _trivial(value: Any) -> bool:
    return value is ABSENT or value is None or isinstance(value, bool) or value in ("", [], {})


@dataclass(slots=True)
class _Taint:
    """The values one cause changed (its differences' new values, fragments of changed text, and what
    its steps then gave), to be looked for in later differences."""

    values: list[Any] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def add(self, value: Any) -> None:
        if _trivial(value):
            return
        self.values.append(value)
        text = _parsed_text(value) or _text(value)
        if len(text) >= _MIN_TEXT and not isinstance(value, int | float):
            self.texts.append(text)

    def add_change(self, left: Any, right: Any) -> None:
        """A changed leaf: its new value, and the words of changed text that are new."""
        self.add(right)
        if isinstance(left, str) and isinstance(right, str):
            old, new = left.split(), right.split()
            for op, _, _, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
                if op in ("replace", "insert"):
                    fragment = " ".join(new[j1:j2])
                    if len(fragment) >= _MIN_TEXT and fragment != right:
                        self.texts.append(fragment)

    def carries(self, value: Any) -> bool:
        """Whether ``value`` (a later difference's new value) holds one of the changed values."""
        if _trivial(value):
            return False
        if any(type(v) is type(value) and v == value for v in self.values):
            return True
        text = _parsed_text(value) or _text(value)
        if any(t in text for t in self.texts):
            return True
        return len(text) >= _MIN_TEXT and isinstance(value, str) and any(text in t for t in self.texts)


@dataclass(slots=True)
class _Building:
    origin: CauseOrigin
    step: str
    seq: int
    differences: list[Difference]
    consequences: list[Consequence] = field(default_factory=list)
    taint: _Taint = field(default_factory=_Taint)

    def done(self) -> Cause:
        return Cause(self.origin, self.step, tuple(self.differences), tuple(self.consequences))


class _Explainer:
    """One run pair's causes, built step by step in the order the steps ran."""

    def __init__(self, left: Run, right: Run, edited: Iterable[str]) -> None:
        self.left = {s.step_id: s for s in left.steps}
        self.right = {s.step_id: s for s in right.steps}
        self.edited = frozenset(edited)
        self.causes: list[_Building] = []
        self.of_step: dict[str, _Building] = {}

    def _new(self, origin: CauseOrigin, step: str, seq: int, diffs: list[Difference]) -> _Building:
        cause = _Building(origin, step, seq, list(diffs))
        for d in diffs:
            cause.taint.add_change(d.left, d.right)
        self.causes.append(cause)
        return cause

    def _carrier(self, value: Any) -> _Building | None:
        return next((c for c in self.causes if c.taint.carries(value)), None)

    def _linked(self, step_id: str, value: Any) -> tuple[_Building, Carried] | None:
        """The cause a structural difference goes under: by data, by its causal parent, else the latest."""
        carrier = self._carrier(value) if value is not None else None
        if carrier is not None:
            return carrier, Carried.DATA
        above = self._ancestor(step_id)
        if above is not None:
            return above, Carried.PARENT
        if self.causes:
            return self.causes[-1], Carried.AFTER
        return None

    def _ancestor(self, step_id: str) -> _Building | None:
        """The cause of the nearest causal ancestor (``parent_step_id``, upwards) that has one."""
        step = self.right.get(step_id) or self.left.get(step_id)
        parent = step.parent_step_id if step is not None else ""
        while parent:
            if parent in self.of_step:
                return self.of_step[parent]
            above = self.right.get(parent) or self.left.get(parent)
            parent = above.parent_step_id if above is not None else ""
        return None

    def run_level(self, diffs: list[Difference]) -> None:
        """The run's task and input: causes before every step."""
        if diffs:
            self._new(CauseOrigin.INPUT, "", -1, diffs)

    def step(self, step_id: str, diffs: list[Difference]) -> None:
        """One step's differences: structure, then arguments, then what it gave."""
        here = self.right.get(step_id) or self.left.get(step_id)
        seq = here.seq if here is not None else 0
        structure = [d for d in diffs if d.kind in _STRUCTURE]
        args = [d for d in diffs if d.kind == DivergenceKind.ARGS]
        outcome = [d for d in diffs if d.kind in _OUTCOME]
        mine: _Building | None = None
        for d in structure:
            value = _face_args(d.right) if d.kind == DivergenceKind.STEP_EXTRA else d.right
            linked = self._linked(step_id, value)
            if linked is None:
                mine = mine or self._new(CauseOrigin.STEP, step_id, seq, [])
                mine.differences.append(d)
                continue
            cause, how = linked
            cause.consequences.append(Consequence(d, how))
            mine = mine or cause
        fresh: list[Difference] = []
        for d in args:
            carrier = self._carrier(d.right)
            if carrier is None:
                fresh.append(d)
            else:
                carrier.consequences.append(Consequence(d, Carried.DATA))
                mine = mine or carrier
        if fresh:
            new = self._new(CauseOrigin.ARGUMENT, step_id, seq, fresh)
            mine = mine or new
        if outcome:
            how = Carried.INPUT  # what it was asked changed: what it gave follows
            if mine is None and (inside := self._ancestor(step_id)) is not None:
                mine, how = inside, Carried.PARENT  # a step inside a tool whose result is already a cause
            if mine is not None:
                for d in outcome:
                    mine.consequences.append(Consequence(d, how))
                    mine.taint.add_change(d.left, d.right)
            else:
                mine = self._new(self._origin(step_id, here), step_id, seq, outcome)
        if mine is not None:
            self.of_step[step_id] = mine
            extra = self.right.get(step_id) if step_id not in self.left else None
            if extra is not None:  # a step only one side made: what it gave is new to the agent
                mine.taint.add(extra.result)

    def _origin(self, step_id: str, step: Step | None) -> CauseOrigin:
        if step_id in self.edited:
            return CauseOrigin.EDIT
        if step is not None and step.kind == StepKind.LLM.value:
            return CauseOrigin.MODEL_ANSWER
        return CauseOrigin.TOOL_RESULT

    def output(self, diffs: list[Difference]) -> None:
        """The run's output: a consequence when it carries a cause, else of the latest one."""
        for d in diffs:
            carrier = self._carrier(d.right)
            if carrier is not None:
                carrier.consequences.append(Consequence(d, Carried.DATA))
            elif self.causes:
                self.causes[-1].consequences.append(Consequence(d, Carried.AFTER))
            else:
                self._new(CauseOrigin.OUTPUT, "", 1 << 62, [d])

    def done(self) -> list[Cause]:
        return [c.done() for c in self.causes]


def _face_args(face: Any) -> Any:
    return face.get("args") if isinstance(face, Mapping) else None


def explain(left: Run, right: Run, diffs: Iterable[Difference], edited: Iterable[str] = ()) -> list[Cause]:
    """One run pair's differences as causes with their consequences, in the order the steps ran.

    ``edited``: the step ids an edit answered (either side's fork lineage), whose differing results are
    causes of origin ``edit``.
    """
    by_step: dict[str, list[Difference]] = {}
    run_level: list[Difference] = []
    output: list[Difference] = []
    for d in diffs:
        if d.kind == DivergenceKind.OUTPUT:
            output.append(d)
        elif d.step:
            by_step.setdefault(d.step, []).append(d)
        else:
            run_level.append(d)
    explainer = _Explainer(left, right, edited)
    explainer.run_level(run_level)
    for step_id in sorted(by_step, key=lambda s: _position(s, explainer)):
        explainer.step(step_id, by_step[step_id])
    explainer.output(output)
    return explainer.done()


def _position(step_id: str, explainer: _Explainer) -> tuple[int, int]:
    """Where a step ran: its seq on the right (the run under study), else on the left."""
    step = explainer.right.get(step_id)
    if step is not None:
        return (step.seq, 0)
    step = explainer.left.get(step_id)
    return ((step.seq if step is not None else 0), 1)


def answered_with_parent(left: Run, right: Run) -> frozenset[str]:
    """Steps one side has and the other does not because the other side answered their parent without
    running it: in a replay (or fork) a tool served from the tape, an edit, a stub or a fake makes no
    child steps. A recorded child is "answered with" its parent when the replayed side has the parent
    (a tool step) and none of its children; the same the other way round. Two recordings: none."""
    found: set[str] = set()
    for have, other in ((left, right), (right, left)):
        if not _replayed(other):
            continue
        other_ids = {s.step_id for s in other.steps}
        parents_with_children = {s.parent_step_id for s in other.steps if s.parent_step_id}
        by_id = {s.step_id: s for s in have.steps}
        for step in have.steps:
            if step.step_id in other_ids:
                continue
            parent = step.parent_step_id
            while parent and parent not in other_ids:
                above = by_id.get(parent)
                parent = above.parent_step_id if above is not None else ""
            anchor = by_id.get(parent) if parent else None
            if anchor is not None and anchor.kind != StepKind.LLM.value and parent not in parents_with_children:
                found.add(step.step_id)
    return frozenset(found)


def _replayed(run: Run) -> bool:
    return run.mode == A.MODE_REPLAY or run.replay_of is not None
