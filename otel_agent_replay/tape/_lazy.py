"""A recorded step whose rarely read fields are filled the first time one of them is read (``LazyStep``).

The loader makes a ``Step`` for every step span of ours; filling its 26 fields (``make_step``: the
attribute look-ups, the conversions of foreign values, a slot each) cost about as much as parsing
the line. Most of them are read only when a replay answers from that step, or by a command that prints
it, and a tape holds runs and steps that a replay never reaches. So the loader sets at once what the
loader itself and a replay's index read of every step (kind, tool, seq, call key, start time, parent
span, attributes), keeps the span's record, and ``make_step`` runs on the first read of any other field.

Nothing is checked later than before: the record is the one ``otlp_span`` made and checked at load,
and ``make_step`` only reads it (it cannot fail). A ``LazyStep`` equals, and hashes as, the ``Step``
``make_step`` makes of the same span.
"""

from __future__ import annotations

from typing import Any, Final

from ._build import make_step
from ._span import SpanRecord
from ._values import Step

__all__ = ["LazyStep", "lazy_step"]

_SET_AT_LOAD: Final = ("kind", "tool", "seq", "call_key", "start_ns", "parent_span_id", "attributes")
_LATER: Final = frozenset(Step.__dataclass_fields__) - frozenset(_SET_AT_LOAD)
_COMPARED: Final = tuple(name for name, f in Step.__dataclass_fields__.items() if f.compare)


class LazyStep(Step):
    """A ``Step`` of a loaded tape: the fields in ``_SET_AT_LOAD`` set, the others made on first read."""

    __slots__ = ("_placed", "_record")

    def __getattr__(self, name: str) -> Any:
        # Python calls this only when a slot is not set: one of the ``_LATER`` fields before the first fill.
        if name not in _LATER:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._fill()
        return object.__getattribute__(self, name)

    def _fill(self) -> None:
        record, placed = self._record, self._placed
        if record is None:
            return  # filled meanwhile by another thread: every slot is set
        args_json, step_id, run_id = placed
        full = make_step(self.kind, self.tool, args_json, self.seq, step_id, self.call_key, run_id, record)
        for name in _LATER:
            _SETTERS[name](self, getattr(full, name))
        _set_record(self, None)
        _set_placed(self, None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Step):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _COMPARED)

    __hash__ = Step.__hash__

    def __repr__(self) -> str:
        return "Step" + Step.__repr__(self)[len(type(self).__qualname__) :]


_new = object.__new__
_SETTERS: Final = {name: getattr(Step, name).__set__ for name in Step.__dataclass_fields__}
_set_kind, _set_tool, _set_seq, _set_call_key, _set_start_ns, _set_parent, _set_attributes = (
    _SETTERS[name] for name in _SET_AT_LOAD
)
_set_record = LazyStep._record.__set__  # type: ignore[attr-defined]
_set_placed = LazyStep._placed.__set__  # type: ignore[attr-defined]


def lazy_step(
    kind: str, tool: str, args_json: str, seq: int, step_id: str, call_key: str, run_id: str, record: SpanRecord
) -> LazyStep:
    """What ``make_step`` with these arguments makes, its rarely read fields left for their first read."""
    step: LazyStep = _new(LazyStep)
    _set_kind(step, kind)
    _set_tool(step, tool)
    _set_seq(step, seq)
    _set_call_key(step, call_key)
    _set_start_ns(step, record.start_ns)
    _set_parent(step, record.parent_span_id)
    _set_attributes(step, record.attributes)
    _set_record(step, record)
    _set_placed(step, (args_json, step_id, run_id))
    return step
