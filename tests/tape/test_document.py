"""A JSON document walked span by span: every envelope, the line of each span, strict errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_agent_replay.core import TapeFormatError
from otel_agent_replay.tape._document import DocumentStream

TRACE = "0af7651916cd43dd8448eb211c80319c"


def otlp_span(span_id: str) -> dict[str, str]:
    return {"traceId": TRACE, "spanId": span_id, "name": f"span {span_id}"}


def read(tmp_path: Path, text: str, first_line: int = 0) -> DocumentStream:
    path = tmp_path / "doc.json"
    path.write_text(text)
    stream = DocumentStream(str(path), path.read_text(), first_line, "the fix")
    stream.document()
    return stream


def test_each_span_knows_the_line_it_starts_on(tmp_path: Path) -> None:
    spans = [otlp_span("1" * 16), otlp_span("2" * 16)]
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, indent=2)
    records = read(tmp_path, text).records
    lines = text.splitlines()
    starts = [i + 1 for i, t in enumerate(lines) if t.strip() == "{" and '"traceId"' in lines[i + 1]]
    assert [r.span_id for r in records] == ["1" * 16, "2" * 16]
    assert [r.line for r in records] == starts
    assert [r.line for r in read(tmp_path, text, first_line=10).records] == [s + 10 for s in starts]


@pytest.mark.parametrize(
    "doc",
    [
        {"result": {"resourceSpans": [{"scopeSpans": [{"spans": [otlp_span("3" * 16)]}]}]}},
        {"data": [{"traceID": TRACE, "spans": [{"traceID": TRACE, "spanID": "3" * 16, "operationName": "x"}]}]},
        {"traceID": TRACE, "spans": [{"traceID": TRACE, "spanID": "3" * 16, "operationName": "x"}]},
    ],
    ids=["jaeger api/v3", "jaeger", "one jaeger trace"],
)
def test_every_envelope_is_walked(tmp_path: Path, doc: dict[str, object]) -> None:
    [record] = read(tmp_path, json.dumps(doc, indent=1)).records
    assert record.span_id == "3" * 16


def test_unknown_keys_are_skipped_and_an_empty_envelope_has_no_spans(tmp_path: Path) -> None:
    assert read(tmp_path, '{"meta": {"a": [1, {"b": null}]}, "resourceSpans": []}').records == []


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{\n"data": {}\n}', 2, '"data" must be an array, found an object; the fix'),
        ('{\n"resourceSpans": [\n[]\n]}', 3, "a resourceSpans entry must be a JSON object, found an array"),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [\n1]}]}]}', 2, "a span must be a JSON object, found a number"),
        ('{"x": 1}', 1, 'not a trace document: no "resourceSpans" (OTLP)'),
        ('{"resourceSpans": [],\n "x": 1, "x": 2}', 2, "duplicate key 'x' in a JSON object"),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [\n{"spanId": "1"}]}]}]}', 2, "has no traceId"),
    ],
)
def test_json_that_is_no_trace_is_a_format_error_at_its_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    with pytest.raises(TapeFormatError) as info:
        read(tmp_path, text)
    assert info.value.line == line
    assert message in str(info.value)
    assert str(info.value).endswith("the fix") or "upgrade" in str(info.value)


@pytest.mark.parametrize(
    "text", ['{"resourceSpans": [] ', '{"resourceSpans": []} {}', '{"resourceSpans": [NaN]}', "{'a': 1}"]
)
def test_text_that_is_no_json_is_a_decode_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        read(tmp_path, text)
