"""``check`` finds lines removed from a recorded tape: a gap in a run's sequence, a parent not on the tape."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from opentelemetry import trace

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._regress import CHECK_FORMAT
from otel_agent_replay.core import attributes as A


@tool(side_effect="read_only")
def fetch(q: str) -> str:
    return q * 2


@tool(side_effect="read_only")
def research(topic: str) -> list[str]:
    return [fetch(topic), fetch(topic + "!")]  # steps inside a step: parent_step_id names research#1


def _record(path: Path) -> Path:
    with record(path), agent_run("researcher", run_id="r-1"):
        fetch("a")
        research("b")
        with trace.get_tracer("the.app").start_as_current_span("app work"):  # a span of the application's own
            fetch("c")
        fetch("d")
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


def test_each_removed_step_line_but_the_last_is_found_naming_the_run_and_the_gap(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = _record(tmp_path / "t.jsonl")
    lines = _lines(tape)
    seqs = {i: _attr(_span(line), A.SEQ) for i, line in enumerate(lines)}
    steps = {i: int(str(s)) for i, s in seqs.items() if s is not None}
    last = max(steps.values())
    assert sorted(steps.values()) == list(range(1, 7))
    for i, seq in steps.items():
        cut = _without(tape, lines[:i] + lines[i + 1 :], tmp_path / f"cut-{seq}.jsonl")
        status, findings = _check(capsysbinary, cut)
        if seq == last:  # nothing after the last step counts the steps
            assert status == 0, findings
            continue
        assert status == CHECK_FORMAT, f"seq {seq} removed, check passed"
        gap = [f for f in findings if "has no step with seq" in f["message"]]
        assert (
            len(gap) == 1 and f"run r-1 has no step with seq {seq} (its steps go up to seq {last})" in gap[0]["message"]
        )
        assert gap[0]["kind"] == "format" and gap[0]["where"].startswith(f"{cut}:")


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
