"""Canonical JSON, call keys, the safe-serialisation rule and binding to signatures."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import inspect
import uuid
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
import pydantic
import pytest

from otel_agent_replay.capture._canonical import call_key, canonical_json, to_jsonable, to_jsonable_walk
from otel_agent_replay.capture._signature import bind_arguments, context_parameters, make_binder


def test_dict_key_order_gives_one_key() -> None:
    assert call_key("search", {"q": "x", "limit": 5}) == call_key("search", {"limit": 5, "q": "x"})
    assert canonical_json({"b": {"z": 1, "y": 2}, "a": 1}) == '{"a":1,"b":{"y":2,"z":1}}'


@pytest.mark.parametrize("padded", ["  hello", "hello  ", "\thello\n", "\u3000hello\u3000", "\u00a0hello"])
def test_surrounding_white_space_gives_one_key(padded: str) -> None:
    assert call_key("t", {"q": padded}) == call_key("t", {"q": "hello"})


def test_inner_white_space_is_kept() -> None:
    assert call_key("t", {"q": "a b"}) != call_key("t", {"q": "ab"})


def test_three_and_string_three_differ() -> None:
    assert call_key("t", {"n": 3}) != call_key("t", {"n": "3"})


def test_true_and_one_differ() -> None:
    assert call_key("t", {"flag": True}) != call_key("t", {"flag": 1})
    assert canonical_json([True, 1]) == "[true,1]"


def test_none_valued_keys_are_dropped() -> None:
    assert call_key("t", {"q": "x", "filter": None}) == call_key("t", {"q": "x"})
    assert canonical_json({"a": None, "b": [None]}) == '{"b":[null]}'


def test_floats_are_rounded_to_six_places() -> None:
    assert call_key("t", {"x": 0.1 + 0.2}) == call_key("t", {"x": 0.3})
    assert call_key("t", {"x": 0.300001}) != call_key("t", {"x": 0.3})


def test_key_shape_and_no_ascii_escaping() -> None:
    key = call_key("search", {"q": "café"})
    tool, digest = key.split(":")
    assert tool == "search" and len(digest) == 12 and int(digest, 16) >= 0
    assert canonical_json({"q": "café"}) == '{"q":"café"}'


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Plain:
    def __init__(self) -> None:
        self.name = "n"
        self._private = "hidden"


class Opaque:
    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Opaque at {hex(id(self))}>"


class Broken:
    __slots__ = ()

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_safe_serialisation_rule() -> None:
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    value = {
        "when": when,
        "day": dt.date(2026, 1, 2),
        "raw": b"\x00\xff",
        "path": PurePosixPath("/tmp/x"),
        "id": ident,
        "amount": Decimal("1.10"),
        "colour": Colour.RED,
        "tags": {"b", "a"},
        "point": Point(1, 2),
        "plain": Plain(),
        "tuple": (1, 2),
        1: "int key",
    }
    assert to_jsonable(value) == {
        "when": "2026-01-02T03:04:05+00:00",
        "day": "2026-01-02",
        "raw": {"$bytes": "AP8="},
        "path": "/tmp/x",
        "id": "12345678-1234-5678-1234-567812345678",
        "amount": "1.10",
        "colour": "red",
        "tags": ["a", "b"],
        "point": {"x": 1, "y": 2},
        "plain": {"name": "n"},
        "tuple": [1, 2],
        "1": "int key",
    }


def test_the_python_walk_follows_the_same_rule_as_the_fast_path() -> None:
    value = {
        "when": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc),
        "t": dt.time(1, 2),
        "id": uuid.UUID(int=7),
        "colour": Colour.RED,
        "point": Point(1, 2),
        "plain": Plain(),
        "tags": frozenset({3, 1}),
        "raw": b"x",
        "nan": float("nan"),
        2: [Decimal("2.5"), PurePosixPath("a/b"), dt.timedelta(seconds=90)],
        None: print,
    }
    assert to_jsonable(value) == to_jsonable_walk(value)


def test_odd_objects_fall_back_to_a_stable_typed_repr() -> None:
    first, second = to_jsonable(Opaque()), to_jsonable(Opaque())
    assert first == second == {"$type": f"{__name__}.Opaque", "$repr": "<Opaque>"}
    assert to_jsonable(Broken()) == {"$type": f"{__name__}.Broken", "$repr": "<unrepresentable>"}
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert to_jsonable(cyclic) == {"self": {"$type": "cycle", "$repr": "<cycle>"}}
    assert to_jsonable(float("nan")) is None and to_jsonable([float("inf")]) == [None]
    orjson.dumps(to_jsonable({"fn": print, "cls": int, "path": Path("a")}))


def test_pydantic_models_use_model_dump() -> None:
    class Order(pydantic.BaseModel):
        id: int
        at: dt.date

    assert to_jsonable(Order(id=3, at=dt.date(2026, 1, 1))) == {"id": 3, "at": "2026-01-01"}


def _search(customer_id: str, limit: int = 20, *, verbose: bool = False) -> None: ...


def test_positional_keyword_and_defaults_bind_to_one_call() -> None:
    sig = inspect.signature(_search)
    forms = [
        bind_arguments(sig, ("c_17",), {}),
        bind_arguments(sig, ("c_17", 20), {}),
        bind_arguments(sig, (), {"customer_id": "c_17", "limit": 20}),
    ]
    assert forms[0] == forms[1] == forms[2] == {"customer_id": "c_17", "limit": 20, "verbose": False}
    assert len({call_key("search", f) for f in forms}) == 1
    with pytest.raises(TypeError):
        bind_arguments(sig, (), {"nope": 1})


def _with_kwargs(a: int, *rest: int, **extra: object) -> None: ...


def test_var_keyword_is_spread_and_var_positional_kept() -> None:
    sig = inspect.signature(_with_kwargs)
    assert bind_arguments(sig, (1, 2, 3), {"k": "v"}) == {"a": 1, "rest": [2, 3], "k": "v"}
    assert bind_arguments(sig, (1,), {}, leave_out=("a",)) == {}


class RunContext:  # stands in for a framework's context type, matched by name
    pass


def _framework_tool(ctx: RunContext, city: str, run_manager: object = None) -> None: ...


class Tools:
    def lookup(self, sku: str) -> None: ...


def test_context_parameters_and_self_are_left_out() -> None:
    assert context_parameters(inspect.signature(_framework_tool), is_method=False) == {"ctx", "run_manager"}
    assert context_parameters(inspect.signature(Tools.lookup), is_method=True) == {"self"}


def _shapes(a: int, b: str = "x", *, c: float = 1.5, ctx: object = None) -> None: ...


def _binds_alike(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The fast binder of ``fn`` binds as ``bind_arguments`` does, in the same order, or raises its
    TypeError; the binder, or None when the call raised."""
    sig = inspect.signature(fn)
    fast = make_binder(sig, leave_out=("ctx",))
    try:
        expected = bind_arguments(sig, args, kwargs, ("ctx",))
    except TypeError as err:
        with pytest.raises(TypeError, match=str(err).split("'")[0]):
            fast(args, kwargs)
        return None
    assert fast(args, kwargs) == expected
    assert list(fast(args, kwargs)) == list(expected)  # same order
    return fast


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {}),
        ((1, "y"), {}),
        ((), {"a": 1}),
        ((1,), {"c": 2.0}),
        ((1,), {"b": "z", "c": 3.0, "ctx": "framework"}),
        ((1, "y", "extra"), {}),  # too many
        ((1,), {"a": 2}),  # a given twice
        ((1,), {"nope": 1}),  # unknown keyword
        ((), {}),  # a missing
        ((), {"b": "only"}),  # a missing
    ],
)
def test_the_fast_binder_binds_like_bind_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    _binds_alike(_shapes, args, kwargs)


def _spread(**body: Any) -> None: ...


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        ((), {"model": "m", "messages": [{"role": "user"}], "body": 3, "ctx": "framework"}),
        ((), {"query": {"q": "lamp"}}),
        ((1,), {"query": 2}),  # positional: the call's own TypeError
    ],
)
def test_the_keywords_only_binder_binds_like_bind_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    fast = _binds_alike(_spread, args, kwargs)
    if fast is not None:
        assert fast(args, kwargs) is not kwargs  # a copy: the caller's dict is never the bound one


def test_signatures_with_star_args_use_the_general_binding() -> None:
    sig = inspect.signature(_with_kwargs)
    assert make_binder(sig)((1, 2), {"k": "v"}) == {"a": 1, "rest": [2], "k": "v"}
