"""The tape's file: a last line without its newline, disk full then freed, the file replaced under us."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.agent_replay_tape import LineEncoder, TapeSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _spans(*names: str, payload: int = 100) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    for name in names:
        with tracer.start_as_current_span(name, attributes={"payload": "x" * payload}):
            pass
    return list(memory.get_finished_spans())


def _tape_names(path: Path) -> list[str]:
    """The span names of a tape whose every line is whole and ends in a newline."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"the tape ends in a partial line: {data[-80:]!r}"
    names = []
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        doc = orjson.loads(line)  # raises on a torn or glued line
        (span,) = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert isinstance(span["name"], str), f"line {number}"
        names.append(span["name"])
    return names


# --- a last line without its newline ----------------------------------------------------------


def test_a_complete_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first, second = _spans("first", "second")
    path.write_bytes(LineEncoder().encode(first).rstrip(b"\n"))  # a writer that leaves off the last newline
    exporter = TapeSpanExporter(path)
    exporter.export([second])
    exporter.shutdown()
    assert _tape_names(path) == ["first", "second"]
    assert exporter.stats.torn_bytes_removed == 0


def test_a_complete_last_line_ending_in_cr_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first, second = _spans("first", "second")
    path.write_bytes(LineEncoder().encode(first).rstrip(b"\n") + b"\r")  # CRLF file missing its LF
    exporter = TapeSpanExporter(path)
    exporter.export([second])
    exporter.shutdown()
    assert _tape_names(path) == ["first", "second"]


@pytest.mark.parametrize(
    "make_tail",
    [
        pytest.param(lambda line: line[:-2], id="closing-brace-missing"),
        pytest.param(lambda line: line[: len(line) // 2], id="cut-in-the-middle"),
        pytest.param(lambda line: line[:-1] + b" trailing", id="garbage-after-the-object"),
        pytest.param(lambda line: b"[1, 2]", id="json-but-not-an-object"),
        pytest.param(lambda line: b'{"resourceSpans": NaN}', id="not-strict-json"),
        pytest.param(lambda line: line[:-1].replace(b"first", b"fi\xffst"), id="not-utf8"),
    ],
)
def test_an_incomplete_or_invalid_last_line_is_cut(tmp_path: Path, make_tail: Callable[[bytes], bytes]) -> None:
    path = tmp_path / "t.jsonl"
    whole, first, second = _spans("whole", "first", "second")
    encoder = LineEncoder()
    tail = make_tail(encoder.encode(first))
    path.write_bytes(encoder.encode(whole) + tail)
    exporter = TapeSpanExporter(path)
    exporter.export([second])
    exporter.shutdown()
    assert _tape_names(path) == ["whole", "second"]
    assert exporter.stats.torn_bytes_removed == len(tail)
