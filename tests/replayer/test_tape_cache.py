"""A tape replayed again in the same process is parsed once, as long as the file stays the same file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from otel_agent_replay import TapeWarning, agent_run, record, replay, tool


@tool(side_effect="read_only")
def price(sku: str) -> dict[str, object]:
    return {"sku": sku, "cents": 1250}


def _record(path: Path, sku: str) -> None:
    with record(path), agent_run("shop"):
        price(sku)


def _replayed(path: Path, sku: str, cents: int = 1250) -> object:
    with replay(path) as session, agent_run("shop"):
        assert price(sku) == {"sku": sku, "cents": cents}
    return session.tape


def test_a_second_replay_of_the_same_file_shares_its_parsed_tape(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _record(path, "a-1")
    first = _replayed(path, "a-1")
    assert _replayed(path, "a-1") is first


def test_a_rewritten_replaced_or_appended_tape_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _record(path, "a-1")
    first = _replayed(path, "a-1")
    # rewritten in place to the same size: the recorded result changes, and a modification time one
    # nanosecond later is enough to read it again
    text = path.read_text()
    assert text.count("1250") == 1
    stamp = path.stat().st_mtime_ns
    path.write_text(text.replace("1250", "9999"))
    os.utime(path, ns=(stamp, stamp + 1))
    second = _replayed(path, "a-1", cents=9999)
    assert second is not first
    replaced = tmp_path / "new.jsonl"
    _record(replaced, "c-3")
    os.replace(replaced, path)
    assert _replayed(path, "c-3") is not second


def test_a_tape_with_warnings_warns_at_every_replay(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _record(path, "a-1")
    with path.open("a") as out:
        out.write('{"torn": ')  # an unterminated last line: skipped with a warning
    for _ in range(2):
        with pytest.warns(TapeWarning):
            _replayed(path, "a-1")
