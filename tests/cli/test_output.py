"""Human output never carries a terminal control sequence from a tape; --json stays exact."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import orjson
import pytest

from otel_agent_replay import agent_run, load_tape, record, tool
from otel_agent_replay.cli import main
from otel_agent_replay.core import visible

CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;pwned\x07"
OVERWRITE = "\x1b[1A\x1b[2K\rPASS all good"
C1_CSI = "\x9b31m"
BIDI = "\u202egnp.exe"
HOSTILE = CLEAR + TITLE + OVERWRITE + C1_CSI + BIDI
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile_tape(path: Path, answer: str) -> str:
    @tool(name="look" + TITLE, side_effect="read_only", version=answer)  # two versions: a `check` finding
    def look(query: str) -> dict[str, str]:
        return {"answer": answer + HOSTILE}

    @tool(side_effect="write")
    def save(text: str) -> None:
        raise RuntimeError("disk says " + HOSTILE)

    with record(path), agent_run("agent" + OVERWRITE, agent_version="1" + CLEAR, task=HOSTILE) as run:
        look(HOSTILE)
        with contextlib.suppress(RuntimeError):
            save(HOSTILE)
        run.set_output(HOSTILE)
    return run.run_id


def _bytes_of(capsysbinary: pytest.CaptureFixture[bytes]) -> str:
    captured = capsysbinary.readouterr()
    return (captured.out + captured.err).decode("utf-8")


def test_show_stats_diff_check_on_a_hostile_tape_write_no_control_sequence(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _hostile_tape(a, "first")
    _hostile_tape(b, "second")
    step = str(load_tape(a).runs[0].steps[0].seq)
    commands = [
        ["show", str(a)],
        ["show", str(a), "--full"],
        ["show", str(a), "--step", step],
        ["stats", str(a), str(b)],
        ["diff", str(a), str(b)],
        ["check", str(a), str(b)],
    ]
    for argv in commands:
        main(argv)
        text = _bytes_of(capsysbinary)
        assert text.strip(), argv
        assert "\x1b" not in text and not _UNSAFE.search(text), (argv, text)
        assert "\\x1b" in text, argv  # shown as the text it is, not hidden


def test_json_output_keeps_tape_text_exact(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    tape = tmp_path / "a.jsonl"
    _hostile_tape(tape, "first")
    assert main(["show", str(tape), "--json"]) == 0
    (run,) = orjson.loads(capsysbinary.readouterr().out)
    assert run["agent_name"] == "agent" + OVERWRITE and run["output"] == HOSTILE
    assert run["steps"][0]["args"] == {"query": HOSTILE}


def test_visible_shows_each_control_character_as_its_escape() -> None:
    assert visible("a\x1b[2Jb\x9bc\u202ed\x7f\x00") == "a\\x1b[2Jb\\x9bc\\u202ed\\x7f\\x00"
    assert visible("line\n\tindented") == "line\n\tindented"
    assert visible("line\n\tindented", newlines=False) == "line\\n\\tindented"
    assert visible("plain ünïcode …") == "plain ünïcode …"
    assert visible("\u200e\u200f\u061c\u2066\u2069") == "\\u200e\\u200f\\u061c\\u2066\\u2069"  # bidi marks, isolates
