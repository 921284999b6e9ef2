"""Reading a file into span records: format detection per file, the BOM, the torn last line, the GC pause."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import orjson
import pytest

from otel_agent_replay.core import TapeFormatError, TapeWarning
from otel_agent_replay.tape._read import TapeReader, paused_gc

TRACE = "0af7651916cd43dd8448eb211c80319c"


def otlp_line(span_id: str) -> bytes:
    span = {"traceId": TRACE, "spanId": span_id, "name": "s"}
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + b"\n"


def jaeger_line(span_id: str) -> bytes:
    span = {"traceID": TRACE, "spanID": span_id, "operationName": "s"}
    return orjson.dumps({"data": [{"traceID": TRACE, "spans": [span]}]}) + b"\n"


def read(path: Path) -> tuple[list[tuple[str, int]], list[str]]:
    reader = TapeReader(str(path))
    spans = [(r.span_id, r.line) for r in reader.spans()]
    return spans, reader.warnings


def test_json_lines_of_mixed_envelopes_and_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + otlp_line("1" * 16) + b"\n" + jaeger_line("2" * 16))
    assert read(path) == ([("1" * 16, 1), ("2" * 16, 3)], [])


def test_a_document_is_detected_from_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    span = {"traceId": TRACE, "spanId": "1" * 16}
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}, indent=2))
    [(span_id, line)], warnings = read(path)
    assert (span_id, warnings) == ("1" * 16, [])
    assert path.read_text().splitlines()[line - 1].strip() == "{"


def test_the_torn_last_line_is_a_tape_warning_kept_by_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(otlp_line("1" * 16) + otlp_line("2" * 16)[:-9])
    with pytest.warns(TapeWarning, match=r":2: skipped the unterminated last line") as caught:
        spans, warnings = read(path)
    assert spans == [("1" * 16, 1)]
    assert warnings == [str(caught[0].message)]
    assert caught[0].filename == __file__


def test_a_directory_is_no_tape(tmp_path: Path) -> None:
    with pytest.raises(TapeFormatError, match="this is a directory, not a tape file"):
        read(tmp_path)


def test_paused_gc_restores_the_collector_state_even_on_error() -> None:
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            with pytest.raises(ValueError), paused_gc():
                assert not gc.isenabled()
                raise ValueError
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
