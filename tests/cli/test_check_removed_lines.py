"""``check`` finds lines removed from a recorded tape: a gap in a run's sequence, a parent not on the tape."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from opentelemetry import trace

from otel_agent_replay import agent_run, record, replay, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._check import CHECK_FORMAT
from otel_agent_replay.core import attributes as A


@tool(side_effect="read_only")
def fetch(q: str) -> str:
    return q * 2


@tool(side_effect="read_only")
def research(topic: str) -> list[str]:
    return [fetch(topic), fetch(topic + "!")]  # steps inside a step: parent_step_id names research#1


@tool(side_effect="read_only")
def lookup(q: str) -> str:
    return q.upper()


def _agent() -> None:
    fetch("a")
    research("b")
    with trace.get_tracer("the.app").start_as_current_span("app work"):  # a span of the application's own
        fetch("c")
    fetch("d")


def _record(path: Path) -> Path:
    with record(path), agent_run("researcher", run_id="r-1"):
        _agent()
    return path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _span(line: bytes) -> dict[str, object]:
    (span,) = orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert isinstance(span, dict)
    return span


def _attr(span: dict[str, object], key: str) -> object:
    for a in span.get("attributes", []):  # type: ignore[attr-defined]
        if a["key"] == key:
            return next(iter(a["value"].values()))
    return None


def _without(path: Path, keep: list[bytes], out: Path) -> Path:
    out.write_bytes(b"".join(keep))
    return out


def _check(capsysbinary: pytest.CaptureFixture[bytes], path: Path) -> tuple[int, list[dict[str, str]]]:
    capsysbinary.readouterr()
    status = main(["check", str(path), "--json"])
    out = capsysbinary.readouterr().out
    report = orjson.loads(out[out.rindex(b'{\n  "status"') :])
    return status, report["findings"]


def test_the_whole_recording_passes(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert _check(capsysbinary, _record(tmp_path / "t.jsonl")) == (0, [])


def _step_lines(lines: list[bytes]) -> dict[int, int]:
    """Line index → seq, for each step's line."""
    seqs = {i: _attr(_span(line), A.SEQ) for i, line in enumerate(lines)}
    return {i: int(str(s)) for i, s in seqs.items() if s is not None}


def test_each_removed_step_line_is_found_naming_the_run_and_what_is_missing(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = _record(tmp_path / "t.jsonl")
    lines = _lines(tape)
    run_line = next(i for i, line in enumerate(lines) if _attr(_span(line), A.RUN_STEPS) is not None)
    assert _attr(_span(lines[run_line]), A.RUN_STEPS) == "6"  # OTLP JSON writes 64-bit integers as strings
    steps = _step_lines(lines)
    assert sorted(steps.values()) == list(range(1, 7))
    for i, seq in steps.items():  # the first, every middle one, and the last
        cut = _without(tape, lines[:i] + lines[i + 1 :], tmp_path / f"cut-{seq}.jsonl")
        status, findings = _check(capsysbinary, cut)
        assert status == CHECK_FORMAT, f"seq {seq} removed, check passed"
        if seq == 6:  # nothing after it on the tape: the run span's count says it is missing
            (gone,) = [f for f in findings if "ended with 6 step(s)" in f["message"]]
            assert f"run r-1 ended with 6 step(s) ({A.RUN_STEPS} on its run span)" in gone["message"]
            assert "the line(s) of seq 6 were removed" in gone["message"] and "re-record the run" in gone["message"]
            assert gone["where"] == f"{cut}:{run_line}"  # the run span's line (one line fewer before it)
            continue
        gap = [f for f in findings if "has no step with seq" in f["message"]]
        assert len(gap) == 1 and f"run r-1 has no step with seq {seq} (its steps go up to seq 6)" in gap[0]["message"]
        assert gap[0]["kind"] == "format" and gap[0]["where"].startswith(f"{cut}:")


def test_the_last_two_steps_removed_are_named_as_a_range(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = _record(tmp_path / "t.jsonl")
    lines = _lines(tape)
    keep = [line for i, line in enumerate(lines) if _step_lines(lines).get(i) not in (5, 6)]
    status, findings = _check(capsysbinary, _without(tape, keep, tmp_path / "cut.jsonl"))
    assert status == CHECK_FORMAT
    assert [f["message"] for f in findings if "ended with" in f["message"]] == [
        f"run r-1 ended with 6 step(s) ({A.RUN_STEPS} on its run span) but the tape has none after seq 4: the "
        "line(s) of seq 5-6 were removed from the tape, and a replay would miss those calls; re-record the run"
    ]


def _without_the_count(lines: list[bytes]) -> list[bytes]:
    """The lines as a recording made before the run span counted its steps wrote them."""
    out = []
    for line in lines:
        doc = orjson.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["attributes"] = [a for a in span.get("attributes", []) if a["key"] != A.RUN_STEPS]
        out.append(orjson.dumps(doc) + b"\n")
    return out


def test_an_older_tape_without_the_count_still_passes_and_its_gaps_are_still_found(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    lines = _without_the_count(_lines(_record(tmp_path / "t.jsonl")))
    old = _without(tmp_path / "t.jsonl", lines, tmp_path / "old.jsonl")
    assert A.RUN_STEPS.encode() not in old.read_bytes()
    assert _check(capsysbinary, old) == (0, [])
    steps = _step_lines(lines)
    last = next(i for i, seq in steps.items() if seq == 6)
    assert _check(capsysbinary, _without(old, lines[:last] + lines[last + 1 :], tmp_path / "a.jsonl")) == (0, [])
    middle = next(i for i, seq in steps.items() if seq == 3)
    status, findings = _check(capsysbinary, _without(old, lines[:middle] + lines[middle + 1 :], tmp_path / "b.jsonl"))
    assert status == CHECK_FORMAT and any("has no step with seq 3" in f["message"] for f in findings)


def test_steps_appended_by_new_episodes_pass_after_the_count(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = _record(tmp_path / "t.jsonl")
    with replay(tape, mode="new_episodes") as session, agent_run("researcher"):
        _agent()
        lookup("new")  # a miss of a read-only tool: run live and appended as seq 7
    assert session.stats.live_tool_calls == 1
    assert max(_step_lines(_lines(tape)).values()) == 7
    assert _check(capsysbinary, tape) == (0, [])


def test_a_removed_parent_step_and_a_removed_parent_span_are_named(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = _record(tmp_path / "t.jsonl")
    lines = _lines(tape)
    research_line = next(i for i, line in enumerate(lines) if _attr(_span(line), A.STEP_ID) == "research#1")
    status, findings = _check(
        capsysbinary, _without(tape, lines[:research_line] + lines[research_line + 1 :], tmp_path / "a.jsonl")
    )
    inside = [f["message"] for f in findings if "which is not on the tape" in f["message"]]
    assert status == CHECK_FORMAT and len(inside) == 2
    assert all("of run r-1 was made inside step research#1" in m for m in inside)
    app = next(i for i, line in enumerate(lines) if _span(line)["name"] == "app work")
    status, findings = _check(capsysbinary, _without(tape, lines[:app] + lines[app + 1 :], tmp_path / "b.jsonl"))
    assert status == CHECK_FORMAT
    (orphan,) = findings
    assert orphan["message"].startswith("step fetch#2 (seq 5) of run r-1 has a parent span ")
    assert "that is not on the tape (its line was removed)" in orphan["message"]
