"""Compiled rebuilders give what the generic walk gives, for every hint and value, fitting or not."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import uuid
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agent_replay.capture import describe, rebuild
from otel_agent_replay.capture._canonical import json_text
from otel_agent_replay.capture._rebuild import _rebuild
from otel_agent_replay.capture._rebuilders import _cache, builder_for


class Tint(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Row:
    id: uuid.UUID
    when: dt.datetime
    price: Decimal
    tags: tuple[str, ...]
    tint: Tint = Tint.RED
    note: str | None = None
    seen: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node] = dataclasses.field(default_factory=list)


_text = st.text(alphabet="abcxyz019 ", max_size=6)
_rows = st.builds(
    Row,
    id=st.uuids(),
    when=st.datetimes(timezones=st.just(dt.timezone.utc)),
    price=st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=0, max_value=999),
    tags=st.lists(_text, max_size=3).map(tuple),
    tint=st.sampled_from(Tint),
    note=st.one_of(st.none(), _text),
)
_nodes = st.recursive(
    st.builds(Node, name=_text), lambda inner: st.builds(Node, name=_text, children=st.lists(inner, max_size=3))
)
_HINTS: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (list[Row], st.lists(_rows, max_size=4)),
    (tuple[Row, ...], st.lists(_rows, max_size=3).map(tuple)),
    (dict[str, Row], st.dictionaries(_text, _rows, max_size=3)),
    (Row, _rows),
    (Node, _nodes),
    (list[uuid.UUID], st.lists(st.uuids(), max_size=4)),
    (list[dt.date], st.lists(st.dates(), max_size=4)),
    (dict[str, list[Decimal]], st.dictionaries(_text, st.lists(st.decimals(places=2, allow_nan=False), max_size=2))),
    (list[float], st.lists(st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False)))),
    (list[bytes], st.lists(st.binary(max_size=6), max_size=3)),
    (list[dt.timedelta], st.lists(st.timedeltas(min_value=dt.timedelta(0), max_value=dt.timedelta(days=9)))),
    (list[Tint], st.lists(st.sampled_from(Tint), max_size=3)),
    (list[PurePosixPath], st.lists(_text.map(lambda t: PurePosixPath("p") / (t.strip() or "x")), max_size=2)),
    (list[Row | None], st.lists(st.one_of(st.none(), _rows), max_size=3)),
    (list[dict[str, Any]], st.lists(st.dictionaries(_text, st.integers()), max_size=3)),
]
# values that do not fit their hint: a dict for a list, a list for a row, text for a number ...
_misfits = st.one_of(
    st.none(), st.integers(), _text, st.lists(st.integers(), max_size=3), st.dictionaries(_text, _text, max_size=2)
)


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        return "value", run()
    except Exception as exc:
        return "raised", type(exc)


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b) or (a != a and b != b)  # NaN


def _agree(hint: Any, value: Any, desc: Any) -> None:
    compiled = _outcome(lambda: builder_for(hint)(value, desc, 0))
    generic = _outcome(lambda: _rebuild(value, hint, desc, 0))
    assert compiled[0] == generic[0], (hint, value, compiled, generic)
    if compiled[0] == "value":
        assert _same(compiled[1], generic[1]), (hint, value, compiled, generic)
    else:
        assert compiled[1] is generic[1] or RecursionError in (compiled[1], generic[1])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(range(len(_HINTS))).flatmap(lambda i: st.tuples(st.just(i), _HINTS[i][1])))
def test_a_compiled_builder_gives_what_the_generic_walk_gives(picked: tuple[int, Any]) -> None:
    index, live = picked
    hint = _HINTS[index][0]
    desc, _ = describe(live)
    value = orjson.loads(json_text(live))
    for d in (desc, None):  # with the recorded description, and from the hint alone
        _agree(hint, value, d)
    assert _same(rebuild(value, hint, desc), live)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([h for h, _ in _HINTS]), _misfits)
def test_values_that_do_not_fit_their_hint_take_the_generic_walk(hint: Any, value: Any) -> None:
    _agree(hint, value, None)


def test_builders_are_compiled_once_per_hint_and_a_class_may_nest_itself() -> None:
    assert builder_for(list[Row]) is builder_for(list[Row]) and list[Row] in _cache
    tree = Node("a", [Node("b", [Node("c")]), Node("d")])
    again = rebuild(orjson.loads(json_text(tree)), Node)
    assert again == tree and type(again.children[0].children[0]) is Node
    deep: Any = {"name": "x", "children": []}
    for _ in range(80):  # deeper than the walk goes: what is left is the JSON, as the generic walk leaves it
        deep = {"name": "x", "children": [deep]}
    _agree(Node, deep, None)
