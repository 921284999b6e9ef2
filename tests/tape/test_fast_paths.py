"""The loader's fast paths load what the full path loads, and fail where and as it fails (issue 15).

A line that starts with the resource and scope of an earlier line has only its spans parsed; trace
and parent ids already checked in the file are looked up, not matched again; a ``Step`` is built
through its slots. Each test loads the same file twice, once as it is and once with the fast paths
switched off (no frame is ever learned, so every line is parsed whole, and no id is remembered),
and compares everything: the runs and steps with their attributes, the warnings, or the error's text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_agent_replay import agent_run, load_tape, model_call, record, tool
from otel_agent_replay.tape import _read, iter_spans
from otel_agent_replay.tape._read import TapeReader
from otel_agent_replay.tape._span import KnownIds
from otel_agent_replay.tape._values import Step, StepError, new_step


@tool(name="search", side_effect="read_only")
def search(query: str, limit: int = 5) -> dict[str, Any]:
    return {"hits": [query] * 2, "note": "café ✓"}


@tool(name="boom")
def boom(x: int) -> None:
    raise KeyError("x")


@model_call(name="plan")
def plan(prompt: str) -> dict[str, Any]:
    return {"choices": [{"text": "ok"}], "usage": {"input_tokens": 3, "output_tokens": 4}}


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A recorded tape's lines: per run a model step, two tool steps, a failing step, the run span."""
    path = tmp_path_factory.mktemp("fast") / "t.jsonl"
    with record(path):
        for limit in range(3):
            with agent_run("bench", task="t"):
                plan(prompt="hi")
                search(query="refund", limit=limit)
                search(query="x")
                with contextlib.suppress(KeyError):
                    boom(3)
    return path.read_bytes().splitlines(keepends=True)


def _describe(value: Any) -> str:
    """Every field of the loaded values, attributes (with their types) included."""
    if dataclasses.is_dataclass(value):
        fields = (f"{f.name}={_describe(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}(" + ", ".join(fields) + ")"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_describe(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {type(v).__name__} {v!r}" for k, v in value.items()) + "}"
    return f"{type(value).__name__} {value!r}"


def _outcome(path: Path, **options: Any) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tape = load_tape(path, **options)
            loaded = _describe(tape.runs) + _describe(tape.warnings) + _describe(list(iter_spans(path, **options)))
        except Exception as exc:  # the error is what is compared
            loaded = f"{type(exc).__name__}: {exc}"
    return loaded + " warnings: " + " | ".join(str(w.message) for w in caught)


@pytest.fixture
def framed_lines(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The line numbers the fast path read (it returned spans, not None)."""
    taken: list[int] = []
    framed = TapeReader._framed

    def spy(self: TapeReader, raw: bytes, start: int, lineno: int) -> Any:
        records = framed(self, raw, start, lineno)
        if records is not None:
            taken.append(lineno)
        return records

    monkeypatch.setattr(TapeReader, "_framed", spy)
    yield taken


class _Forgetful(dict[str, str]):
    """A dict that keeps nothing: every id is checked again."""

    def __setitem__(self, key: str, value: str) -> None:
        pass


class _NoKnownIds(KnownIds):
    def __init__(self) -> None:
        self.traces = _Forgetful()
        self.parents = _Forgetful()


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[str, str]:
    """The outcome with the fast paths, and with every line parsed whole and every id checked."""
    fast = _outcome(path, **options)
    with monkeypatch.context() as m:
        m.setattr(TapeReader, "_learn_frame", lambda self, raw, data: None)
        m.setattr(_read, "KnownIds", _NoKnownIds)
        full = _outcome(path, **options)
    return fast, full


def test_a_recorded_tape_is_read_by_the_fast_path_and_loads_the_same(
    tmp_path: Path, lines: list[bytes], framed_lines: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines))
    fast, full = _both(path, monkeypatch)
    assert fast == full
    assert "café ✓" in fast and "builtins.KeyError" in fast  # a non-ASCII result and a failed step are in it
    # every line but the first (where the frame is learned) went the fast way, for load_tape and iter_spans
    assert sorted(set(framed_lines)) == list(range(2, len(lines) + 1))


def _edit_span(edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    """A mutation of a line's only span, written back as orjson writes it (so it starts with the frame)."""

    def mutate(line: bytes) -> bytes:
        doc = orjson.loads(line)
        edit(doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0])
        return orjson.dumps(doc) + b"\n"

    return mutate


def _attribute(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(span: dict[str, Any]) -> None:
        for kv in span["attributes"]:
            if kv["key"] == key:
                kv["value"] = value

    return edit


def _replace(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def mutate(line: bytes) -> bytes:
        assert old in line
        return line.replace(old, new, 1)

    return mutate


def _schema(version: str) -> Callable[[dict[str, Any]], None]:
    return lambda span: span["attributes"].append(
        {"key": "agent_replay.schema_version", "value": {"stringValue": version}}
    )


def _resource(line: bytes) -> bytes:
    doc = orjson.loads(line)
    doc["resourceSpans"][0]["resource"]["attributes"][0]["value"] = {"stringValue": "jävä"}
    return orjson.dumps(doc) + b"\n"


def _spans_in_an_object(line: bytes) -> bytes:
    doc = orjson.loads(line)
    scope = doc["resourceSpans"][0]["scopeSpans"][0]
    scope["spans"] = {"x": scope["spans"]}
    return orjson.dumps(doc) + b"\n"


def _two_spans(line: bytes) -> bytes:
    doc = orjson.loads(line)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**spans[0], "spanId": "00000000000000ab"})
    return orjson.dumps(doc) + b"\n"


def _two_scopes(line: bytes) -> bytes:
    doc = orjson.loads(line)
    scopes = doc["resourceSpans"][0]["scopeSpans"]
    scopes.append({"scope": {"name": "other"}, "spans": [{**scopes[0]["spans"][0], "spanId": "00000000000000cd"}]})
    return orjson.dumps(doc) + b"\n"


# Line 3 (a tool step: the frame was learned on line 1) is replaced by each of these.
MUTATIONS: dict[str, tuple[Callable[[bytes], bytes], str | None]] = {
    "invalid JSON": (_replace(b'"spanId":', b'"spanId"'), r"invalid JSON \(.* at column \d+\)"),
    "duplicate span field": (_replace(b'"kind":1,', b'"kind":1,"kind":1,'), "duplicate key 'kind'"),
    "duplicate attribute field": (
        _replace(b'{"stringValue":"search"}', b'{"stringValue":"search","stringValue":"x"}'),
        "duplicate key 'stringValue'",
    ),
    "huge integer": (_replace(b'"kind":1,', b'"kind":' + b"9" * 5000 + b","), "invalid JSON"),
    "non-finite number": (_replace(b'"kind":1,', b'"kind":NaN,'), "NaN and Infinity are not JSON numbers"),
    "huge intValue": (_edit_span(_attribute("agent_replay.seq", {"intValue": "9" * 5000})), "malformed span data"),
    "intValue not an integer": (
        _edit_span(_attribute("agent_replay.seq", {"intValue": "two"})),
        "intValue 'two' is not an integer",
    ),
    "boolValue not a flag": (
        _edit_span(_attribute("agent_replay.kind", {"boolValue": "yes"})),
        "boolValue 'yes' is not true or false",
    ),
    "unknown value type": (_edit_span(_attribute("agent_replay.kind", {"weird": 1})), "unknown value type"),
    "value not an object": (
        _edit_span(_attribute("agent_replay.kind", "tool")),
        r"attribute 'agent_replay.kind': its value 'tool' is not an OTLP AnyValue",
    ),
    "attribute twice": (_edit_span(lambda s: s["attributes"].append(s["attributes"][0])), "appears twice"),
    "attribute without key": (_edit_span(lambda s: s["attributes"][0].pop("key")), "an attribute has no key"),
    "bad trace id": (_edit_span(lambda s: s.update(traceId="z" * 32)), "traceId 'z{32}' is not 32 hex digits"),
    "span id as trace id": (_edit_span(lambda s: s.update(traceId=s["parentSpanId"])), "is not 32 hex digits"),
    "trace id as parent id": (_edit_span(lambda s: s.update(parentSpanId=s["traceId"])), "is not 16 hex digits"),
    "trace id not a string": (_edit_span(lambda s: s.update(traceId=[1])), "traceId \\[1\\] is not 32 hex"),
    "uppercase ids": (
        _edit_span(lambda s: s.update(traceId=s["traceId"].upper(), parentSpanId=s["parentSpanId"].upper())),
        None,
    ),
    "no spanId": (_edit_span(lambda s: s.pop("spanId")), "has no spanId"),
    "bad time": (_edit_span(lambda s: s.update(startTimeUnixNano="12a")), "startTimeUnixNano '12a' is not an integer"),
    "time as a number": (_edit_span(lambda s: s.update(endTimeUnixNano=5)), None),
    "spans not a list": (_spans_in_an_object, r"malformed span data \(AttributeError"),
    "unknown schema version": (_edit_span(_schema("99")), "cannot read"),
    "another resource": (_resource, None),
    "two spans on the line": (_two_spans, None),
    "two scopes on the line": (_two_scopes, None),
    "spacing": (_replace(b'"kind":1,', b'"kind": 1,'), None),
    "escaped text": (_replace(b'"name":"execute_tool search"', b'"name":"execute_tool s\\u0065arch"'), None),
}


@pytest.mark.parametrize("kind", list(MUTATIONS))
def test_a_changed_line_loads_or_fails_as_the_full_path_has_it(
    tmp_path: Path, lines: list[bytes], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    mutate, problem = MUTATIONS[kind]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join([*lines[:2], mutate(lines[2]), *lines[3:]]))
    fast, full = _both(path, monkeypatch)
    assert fast == full
    if problem is not None:
        assert re.match(rf"TapeFormatError: {re.escape(str(path))}:3: .*{problem}", fast)


def test_a_second_copy_of_a_step_line_and_a_torn_last_line(
    tmp_path: Path, lines: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join([*lines, lines[2]]))
    fast, full = _both(path, monkeypatch)
    assert fast == full
    assert re.match(rf"TapeFormatError: {re.escape(str(path))}:{len(lines) + 1}: step span .* appears twice", fast)
    path.write_bytes(b"".join([*lines, lines[2][:-40]]))
    fast, full = _both(path, monkeypatch)
    assert fast == full
    assert f"{path}:{len(lines) + 1}: skipped the unterminated last line" in fast


def test_the_line_cap_holds_on_the_fast_path(
    tmp_path: Path, lines: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    longest = max(len(line) for line in lines)
    long_line = lines[2].replace(b'"name":"execute_tool search"', b'"name":"execute_tool ' + b"s" * longest + b'"', 1)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join([*lines[:2], long_line, *lines[3:]]))
    fast, full = _both(path, monkeypatch, max_line_bytes=longest)
    assert fast == full
    assert re.match(rf"TapeFormatError: {re.escape(str(path))}:3: the line is longer than the cap", fast)


def test_new_step_is_step_with_the_same_fields() -> None:
    names = [f.name for f in dataclasses.fields(Step)]
    values: list[Any] = [f"value {i}" for i in range(len(names))]
    values[names.index("error")] = StepError("KeyError", "x")
    made = new_step(*values)
    built = Step(*values)
    assert [getattr(made, n) for n in names] == [getattr(built, n) for n in names] == values
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 2  # type: ignore[misc]
    assert list(new_step.__code__.co_varnames[: new_step.__code__.co_argcount]) == names
