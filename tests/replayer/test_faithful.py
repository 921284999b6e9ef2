"""Faithful replay: a replayed result has the live call's type; a recorded exception comes back as itself."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import itertools
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
import pydantic
import pytest
from helpers.rawtape import steps_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion

from otel_agent_replay import (
    RecordedToolError,
    TapeWarning,
    agent_run,
    load_tape,
    model_call,
    record,
    replay,
    tool,
)
from otel_agent_replay.core import attributes as A


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(int, enum.Enum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Item:
    name: str
    when: dt.datetime
    tags: tuple[str, ...]
    price: Decimal


class Order(pydantic.BaseModel):
    id: uuid.UUID
    created: dt.datetime
    color: Color
    items: list[Item] = []
    note: str | None = None


class CodeError(Exception):
    """An agent's own error type: the status is an attribute, the message is derived."""

    def __init__(self, status: int) -> None:
        super().__init__(f"upstream answered {status}")
        self.status = status


def _replayed(value_of: Callable[[], Any], *, annotated: Any = None, result_type: Any = None) -> tuple[Any, Any]:
    """Record a tool that returns ``value_of()``, replay it; both values."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"

        def produce(n: int) -> Any:
            return value_of()

        if annotated is not None:
            produce.__annotations__["return"] = annotated
        double = tool(side_effect="read_only", name="produce", result_type=result_type)(produce)
        with record(path), agent_run("a"):
            live = double(1)
        with replay(path), agent_run("a"):
            again = double(1)
    return live, again


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return (
            a.keys() == b.keys()
            and all(_same(a[k], b[k]) for k in a)
            and all(type(x) is type(y) for x, y in zip(sorted(a, key=repr), sorted(b, key=repr), strict=True))
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (set, frozenset)):
        return a == b and sorted(map(repr, a)) == sorted(map(repr, b))
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, pydantic.BaseModel):
        return all(_same(getattr(a, name), getattr(b, name)) for name in type(a).model_fields)
    return bool(a == b)


# --- the property: every supported type, and nested containers of them -------------------------

_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 ", max_size=8)
_aware = st.datetimes(
    min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.timezone.utc)
)
_leaves = st.one_of(
    _text,
    st.integers(min_value=-(2**53), max_value=2**53),
    st.integers(min_value=2**64, max_value=2**90) | st.integers(min_value=-(2**90), max_value=-(2**63) - 1),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.booleans(),
    st.none(),
    st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)),
    _aware,
    st.dates(),
    st.times(),
    st.timedeltas(min_value=dt.timedelta(days=-9999), max_value=dt.timedelta(days=9999)),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False, places=4, max_value=10**9, min_value=-(10**9)),
    _text.map(lambda t: Path("/data") / (t.strip() or "x")),
    _text.map(lambda t: PurePosixPath("rel") / (t.strip() or "x")),
    st.binary(max_size=16),
    st.binary(max_size=8).map(bytearray),
    st.sampled_from(Color),
    st.sampled_from(Level),
)
_hashable = st.one_of(
    _text, st.integers(min_value=-1000, max_value=1000), st.uuids(), st.dates(), st.sampled_from(Color)
)
_items = st.builds(
    Item,
    name=_text,
    when=_aware,
    tags=st.tuples(_text, _text),
    price=st.decimals(allow_nan=False, allow_infinity=False, places=2, max_value=1000, min_value=0),
)
_orders = st.builds(
    Order,
    id=st.uuids(),
    created=_aware,
    color=st.sampled_from(Color),
    items=st.lists(_items, max_size=2),
    note=st.one_of(st.none(), _text),
)
_keys = st.sampled_from(["a", "b", "c", "items", "when", "value"])
_values = st.recursive(
    st.one_of(_leaves, _items, _orders),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.dictionaries(st.integers(min_value=0, max_value=99), inner, max_size=3),
        st.sets(_hashable, max_size=4),
        st.frozensets(_hashable, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_every_supported_type_comes_back_as_itself(value: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TapeWarning)  # a supported type never warns
        live, again = _replayed(lambda: value)
    assert live is value
    assert _same(live, again), f"{live!r} came back as {again!r}"


def test_integers_beyond_64_bits_are_recorded_and_come_back_as_integers(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"

    @tool(side_effect="read_only")
    def factor(n: int) -> dict[str, Any]:
        return {"n": n, "parts": [n // 3, -(2**80)], "small": 7}

    @tool(side_effect="read_only", name="factor_untyped")
    def factor_untyped(n: int) -> Any:
        return [n, 2**100]

    with record(path), agent_run("big"):
        live = factor(2**70 + 1)  # neither the argument nor the result may break the call
        live_untyped = factor_untyped(2**65)
    steps = load_tape(path).runs[0].steps
    assert [s.tool for s in steps] == ["factor", "factor_untyped"]  # both steps are on the tape
    with replay(path) as session, agent_run("big"):
        again = factor(2**70 + 1)
        again_untyped = factor_untyped(2**65)
    assert session.stats["tape_hits"] == 2 and session.stats["live_tool_calls"] == 0
    assert _same(again, live) and _same(again_untyped, live_untyped)


# --- the return annotation leads; result_type= -------------------------------------------------


def test_the_return_annotation_rebuilds_a_class_replay_cannot_find_by_name() -> None:
    @dataclasses.dataclass
    class Local:  # defined inside a function: no name replay could look up
        when: dt.date
        tags: frozenset[str]

    live, again = _replayed(lambda: [Local(dt.date(2025, 1, 31), frozenset({"x"}))], annotated=list[Local])
    assert _same(live, again) and type(again[0]) is Local


def test_result_type_wins_over_the_annotation() -> None:
    _, again = _replayed(lambda: (1, "2025-01-31"), annotated=list[Any], result_type=tuple[int, dt.date])
    assert again == (1, dt.date(2025, 1, 31))  # the result_type says the string is a date


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (dt.datetime | None, dt.datetime(2025, 1, 31, 12, 0)),
        (dt.datetime | None, None),
        (int | str, 3),
        (dict[str, list[uuid.UUID]], {"ids": [uuid.UUID(int=1), uuid.UUID(int=2)]}),
        (dict[int, Color], {1: Color.RED}),
        (set[int], {1, 2}),
        (
            Order | None,
            Order(id=uuid.UUID(int=3), created=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), color=Color.RED),
        ),
    ],
)
def test_annotated_optionals_unions_and_containers(annotation: Any, value: Any) -> None:
    live, again = _replayed(lambda: value, annotated=annotation)
    assert _same(live, again)


# --- what cannot come back as itself warns at record time -----------------------------------------


class _Plain:
    def __init__(self) -> None:
        self.x = 1


class _Point(tuple):  # type: ignore[type-arg]
    pass


def _gen() -> Any:
    yield 1


@pytest.mark.parametrize(
    ("make", "type_name"),
    [
        (_Plain, "_Plain"),  # a plain object: only its public attributes reach the tape
        (lambda: _Point((1, 2)), "_Point"),  # a subclass of a JSON type
        (lambda: _gen(), "builtins.generator"),  # a generator returned by a plain function
        (lambda: len, "builtins.builtin_function_or_method"),  # a callable
        (lambda: ValueError("x"), "builtins.ValueError"),  # an exception returned, not raised
    ],
)
def test_a_value_that_cannot_come_back_as_itself_warns_at_record_time(make: Callable[[], Any], type_name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"

        @tool(side_effect="read_only")
        def lossy_tool() -> Any:
            return make()

        with record(path), agent_run("a"), pytest.warns(TapeWarning) as caught:
            lossy_tool()
    (message,) = [str(w.message) for w in caught if issubclass(w.category, TapeWarning)]
    assert "'lossy_tool'" in message and type_name in message
    assert "result_type=" in message and "annotate the return type" in message


def test_the_tape_stays_plain_json_with_the_type_beside_it(tape: Path) -> None:
    @tool(side_effect="read_only")
    def when() -> Any:
        return {"at": dt.date(2025, 1, 31), "raw": b"\x00"}

    @tool(side_effect="read_only")
    def plain() -> Any:
        return {"a": [1, "x"]}

    with record(tape), agent_run("a"):
        when()
        plain()
    first, second = steps_of(tape)
    assert orjson.loads(first.attrs[A.GEN_AI_TOOL_CALL_RESULT]) == {"at": "2025-01-31", "raw": {"$bytes": "AA=="}}
    assert orjson.loads(first.attrs[A.RESULT_TYPE]) == {"t": "dict", "v": {"at": {"t": "date"}, "raw": {"t": "bytes"}}}
    assert A.RESULT_TYPE not in second.attrs  # plain JSON needs nothing beside it


def _with_result_type(tape: Path, description: object) -> Path:
    """A copy of a one-step tape whose step carries a forged type description."""
    attribute = {"key": A.RESULT_TYPE, "value": {"stringValue": orjson.dumps(description).decode()}}
    lines = []
    for line in tape.read_text().splitlines():
        data = orjson.loads(line)
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["name"].startswith("execute_tool"):
                        span["attributes"].append(attribute)
        lines.append(orjson.dumps(data).decode())
    forged = tape.with_name("forged.jsonl")
    forged.write_text("\n".join(lines) + "\n")
    return forged


def test_tape_data_never_imports_a_module_nor_calls_a_class_of_another_kind(tape: Path) -> None:
    @tool(side_effect="read_only")
    def named() -> Any:
        return {"a": 1}

    with record(tape), agent_run("a"):
        named()
    sys.modules.pop("xml.dom.minidom", None)
    forged = _with_result_type(tape, {"t": "model", "c": "xml.dom.minidom.Document"})
    assert load_tape(forged).runs[0].steps[0].attributes[A.RESULT_TYPE]
    with replay(forged), agent_run("a"):
        assert named() == {"a": 1}
    assert "xml.dom.minidom" not in sys.modules  # named by the tape, never imported
    for cls in ("subprocess.Popen", "builtins.exec", "os.system"):  # loaded, but not a model or dataclass
        forged = _with_result_type(tape, {"t": "dataclass", "c": cls})
        with replay(forged), agent_run("a"):
            assert named() == {"a": 1}


# --- a real OpenAI response object ----------------------------------------------------------------

_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1735689600,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Paris", "refusal": None},
            "logprobs": None,
        }
    ],
    "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
}


@pytest.mark.parametrize("annotated", [True, False])
def test_an_openai_chat_completion_comes_back_as_one(tape: Path, annotated: bool) -> None:
    def chat(model: str, question: str) -> Any:
        return ChatCompletion.model_validate(_COMPLETION)

    if annotated:
        chat.__annotations__["return"] = ChatCompletion
    ask = model_call(provider="openai")(chat)
    with record(tape), agent_run("a"):
        live = ask("gpt-4o-mini", "capital of France?")
    with replay(tape), agent_run("a"):
        again = ask("gpt-4o-mini", "capital of France?")
    assert type(again) is ChatCompletion and again == live
    assert again.choices[0].message.content == "Paris" and again.usage is not None
    assert again.usage.total_tokens == 10


# --- exceptions -----------------------------------------------------------------------------------


def _agent(fetch: Callable[[str], Any]) -> str:
    """An agent that branches on its error type and its attribute."""
    try:
        fetch("orders")
    except CodeError as e:
        if e.status == 503:
            return "retry later"
        return f"failed {e.status}"
    except KeyError as e:
        return f"no {e.args[0]}"
    return "ok"


def test_an_agent_takes_the_same_except_branch_live_and_offline(tape: Path) -> None:
    @tool(side_effect="read_only")
    def fetch(what: str) -> Any:
        raise CodeError(503)

    with record(tape), agent_run("a"):
        live = _agent(fetch)
    with replay(tape), agent_run("a"):
        offline = _agent(fetch)
    assert live == offline == "retry later"
    with replay(tape), agent_run("a"), pytest.raises(CodeError) as caught:
        fetch("orders")
    assert caught.value.status == 503 and str(caught.value) == "upstream answered 503"
    (step,) = load_tape(tape).runs[0].steps
    assert orjson.loads(step.attributes[A.ERROR_ATTRIBUTES]) == {"status": 503}


def test_key_error_round_trips_exactly(tape: Path) -> None:
    @tool(side_effect="read_only")
    def lookup(key: str) -> Any:
        return {}[key]

    with record(tape), agent_run("a"), pytest.raises(KeyError) as live:
        lookup("missing")
    with replay(tape), agent_run("a"), pytest.raises(KeyError) as offline:
        lookup("missing")
    assert type(offline.value) is KeyError
    assert offline.value.args == live.value.args == ("missing",)
    assert str(offline.value) == str(live.value) == "'missing'"


def test_an_exception_class_that_is_not_loaded_is_a_recorded_tool_error(tape: Path) -> None:
    @tool(side_effect="read_only")
    def fetch(what: str) -> Any:
        raise CodeError(500)

    with record(tape), agent_run("a"), pytest.raises(CodeError):
        fetch("x")
    text = tape.read_text().replace(f"{__name__}.CodeError", "not_a_loaded_module.CodeError")
    tape.write_text(text)
    with replay(tape), agent_run("a"), pytest.raises(RecordedToolError) as caught:
        fetch("x")
    assert caught.value.type_name == "not_a_loaded_module.CodeError"
    assert "upstream answered 500" in str(caught.value)


def test_exception_args_and_attributes_are_redacted(tape: Path) -> None:
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"

    class AuthError(Exception):
        def __init__(self, key: str) -> None:
            super().__init__(f"bad key {key}")
            self.key = key
            self.code = "invalid_api_key"

    @tool(side_effect="read_only")
    def call() -> Any:
        raise AuthError(secret)

    with record(tape), agent_run("a"), pytest.raises(AuthError):
        call()
    assert secret not in tape.read_text()
    (step,) = load_tape(tape).runs[0].steps
    assert orjson.loads(step.attributes[A.ERROR_ATTRIBUTES])["code"] == "invalid_api_key"


def test_many_results_in_one_run_keep_their_types(tape: Path) -> None:
    values = [dt.date(2025, 1, d) for d in range(1, 4)]
    counter = itertools.count()

    @tool(side_effect="read_only")
    def day(n: int) -> Any:
        next(counter)
        return (values[n], {values[n]})

    with record(tape), agent_run("a"):
        live = [day(n) for n in range(3)]
    with replay(tape), agent_run("a"):
        again = [day(n) for n in range(3)]
    assert _same(live, again) and next(counter) == 3  # the tool ran only when recording


def test_a_replay_recorded_again_keeps_the_types(tape: Path, tmp_path: Path) -> None:
    @tool(side_effect="read_only")
    def when() -> Any:
        return (dt.date(2025, 1, 31), Color.RED)

    with record(tape), agent_run("a"):
        live = when()
    again_tape = tmp_path / "replayed.jsonl"
    with record(again_tape), replay(tape), agent_run("a"):
        when()
    with replay(again_tape), agent_run("a"):
        assert _same(when(), live)  # the replay's own spans carry the types too


def test_a_redacted_value_stays_redacted_and_the_rest_is_rebuilt(tape: Path) -> None:
    @tool(side_effect="read_only")
    def session() -> Any:
        return {"api_key": b"sk-secret-bytes", "expires": dt.date(2025, 2, 1), "ids": (1, 2)}

    with record(tape), agent_run("a"):
        session()
    with replay(tape), agent_run("a"):
        again = session()
    assert again == {"api_key": "[REDACTED]", "expires": dt.date(2025, 2, 1), "ids": (1, 2)}


def test_a_class_defined_inside_a_function_warns_unless_annotated(tape: Path) -> None:
    @dataclasses.dataclass
    class Inner:
        n: int

    @tool(side_effect="read_only")
    def unannotated() -> Any:
        return Inner(1)

    @tool(side_effect="read_only", result_type=Inner)
    def annotated() -> Any:
        return Inner(2)

    with record(tape), agent_run("a"), pytest.warns(TapeWarning) as caught:
        unannotated()
        annotated()
    (message,) = [str(w.message) for w in caught]
    assert "'unannotated'" in message and "Inner (defined inside a function)" in message
    with replay(tape), agent_run("a"):
        assert unannotated() == {"n": 1}  # its JSON: replay cannot find the class by name
        assert annotated() == Inner(2)
