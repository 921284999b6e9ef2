"""The two arguable cases of decoration: what ``inspect.unwrap(tool)`` is, and a tool that is an object.

Decided in docs/design.md ("Capture pipeline", last paragraphs): unwrapping a tool gives a twin of
the function that reads exactly as the function, but that a replay still fences when it is called;
an object with ``__call__`` is decorated as its bound ``__call__``, named by its class.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_agent_replay import SideEffectRefused, agent_run, load_tape, record, replay, tool

WRITES: list[str] = []


@tool(side_effect="write")
def write_note(text: str, shout: bool = False) -> Note:
    """Write a note somewhere outside the process."""
    WRITES.append(text.upper() if shout else text)
    return Note(text)


@tool(side_effect="read_only")
def read_note(key: str) -> str:
    return f"note {key}"


@tool(side_effect="read_only")
async def fetch_note(key: str) -> str:
    return f"fetched {key}"


@tool(side_effect="read_only")
def stream_note(key: str) -> Iterator[str]:
    yield from key


@dataclasses.dataclass(frozen=True)
class Note:
    text: str


def test_unwrap_reads_as_the_function_signature_hints_source_and_kind() -> None:
    bare = inspect.unwrap(write_note)
    assert bare is not write_note and bare.__name__ == "write_note" and bare.__qualname__ == "write_note"
    assert bare.__doc__ == "Write a note somewhere outside the process."
    assert str(inspect.signature(bare)) == "(text: 'str', shout: 'bool' = False) -> 'Note'"
    assert str(inspect.signature(write_note)) == str(inspect.signature(bare))
    # a forward reference (this module has `from __future__ import annotations`) resolves in the tool's module
    assert typing.get_type_hints(bare) == {"text": str, "shout": bool, "return": Note}
    assert inspect.getsource(bare).startswith('@tool(side_effect="write")\ndef write_note(')
    assert inspect.getsourcefile(bare) == __file__
    assert inspect.iscoroutinefunction(inspect.unwrap(fetch_note))
    assert inspect.isgeneratorfunction(inspect.unwrap(stream_note))
    assert not hasattr(bare, "__wrapped__")  # unwrap stops at the twin


def test_outside_a_replay_the_unwrapped_tool_is_the_bare_function(tmp_path: Path) -> None:
    WRITES.clear()
    with record(tmp_path / "t.jsonl"), agent_run("a"):
        assert inspect.unwrap(write_note)("hi", shout=True) == Note("hi")  # how a tool's own test calls it
        read_note("k")
    assert WRITES == ["HI"]
    assert [s.tool for s in load_tape(tmp_path / "t.jsonl").runs[0].steps] == ["read_note"]  # not a step


def test_in_a_replay_an_unwrapped_write_tool_is_refused_and_counted(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        read_note("k")
    WRITES.clear()
    with pytest.raises(SideEffectRefused, match="write_note"), replay(tape) as session, agent_run("a"):
        assert read_note("k") == "note k"
        assert inspect.unwrap(read_note)("k") == "note k"  # a read-only body runs as it would
        inspect.unwrap(write_note)("never")
    assert WRITES == [] and session.stats["refused_side_effects"] == 1


def test_an_unwrapped_write_tool_is_served_from_the_tape_when_stubbed(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        write_note("kept")
    WRITES.clear()
    with replay(tape, stub=("write_note",)) as session, agent_run("a"):
        assert inspect.unwrap(write_note)("kept") == Note("kept")
    assert WRITES == [] and session.stats["tape_hits"] == 1


class Search:
    """A tool that is an object: frameworks hold tools as instances with ``__call__``."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, query: str, limit: int = 2) -> list[str]:
        self.calls += 1
        return [f"{query}-{i}" for i in range(limit)]


class AsyncSearch:
    async def __call__(self, query: str) -> str:
        return f"async {query}"


def test_an_object_with_call_is_a_tool_named_by_its_class(tmp_path: Path) -> None:
    search = Search()
    decorated = tool(side_effect="read_only")(search)
    asynchronous = tool(side_effect="read_only")(AsyncSearch())
    assert (
        decorated.__name__ == "Search"
        and str(inspect.signature(decorated)) == "(query: 'str', limit: 'int' = 2) -> 'list[str]'"
    )
    assert inspect.iscoroutinefunction(asynchronous)
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        assert decorated("x") == ["x-0", "x-1"]
        assert asyncio.run(asynchronous("y")) == "async y"
    steps = load_tape(tape).runs[0].steps
    assert [(s.tool, s.args) for s in steps] == [
        ("Search", {"query": "x", "limit": 2}),
        ("AsyncSearch", {"query": "y"}),
    ]
    with replay(tape) as session, agent_run("a"):
        assert decorated("x") == ["x-0", "x-1"]
        assert asyncio.run(asynchronous("y")) == "async y"
    assert search.calls == 1 and session.stats["tape_hits"] == 2  # served, not called again
    named = tool(name="web_search", side_effect="read_only")(Search())
    assert named.__name__ == "Search" and inspect.unwrap(named)("q", 1) == ["q-0"]
