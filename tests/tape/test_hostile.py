"""Hostile files: huge integers, files that are not regular files, oversized lines and blobs, tampered blobs."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_agent_replay import TapeFormatError, TapeNotFoundError, agent_run, load_tape, record, replay, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._check import CHECK_FORMAT


@tool(side_effect="read_only")
def fetch(doc: str) -> dict[str, Any]:
    return {"doc": doc, "body": "x" * 300}


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    with record(path, max_string=64, store_full_payloads=True), agent_run("a"):
        fetch("d1")
    return path


def _huge_int_line(tape: Path) -> str:
    line = tape.read_text().splitlines()[0]
    huge = line.replace('"intValue":"1"', '"intValue":' + "9" * 5000, 1)
    assert huge != line
    return huge


@pytest.mark.parametrize("form", ["line", "document"])
def test_a_huge_integer_is_a_format_error_with_file_and_line(tape: Path, tmp_path: Path, form: str) -> None:
    huge = _huge_int_line(tape)
    bad = tmp_path / f"huge-{form}.jsonl"
    if form == "line":
        bad.write_text(huge + "\n")
    else:  # one pretty-printed document: read by the streaming document reader
        bad.write_bytes(orjson.dumps(orjson.loads(huge.replace("9" * 5000, '"1"')), option=orjson.OPT_INDENT_2))
        text = bad.read_text().replace('"intValue": "1"', '"intValue": ' + "9" * 5000, 1)
        bad.write_text(text)
    with pytest.raises(TapeFormatError, match=rf"{bad.name}:\d+: invalid JSON") as err:
        load_tape(bad)
    assert err.value.line is not None
    with pytest.raises(TapeFormatError, match=rf"{bad.name}:\d+:"), replay(bad):
        pass
    assert main(["show", str(bad)]) == 2
    assert main(["check", str(bad)]) == CHECK_FORMAT


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def load() -> None:
        try:
            load_tape(fifo)
        except BaseException as exc:
            done.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "load_tape hung on a FIFO"
    assert isinstance(done[0], TapeFormatError) and "FIFO" in str(done[0])


@pytest.mark.parametrize("device", ["/dev/zero", "/proc/self/mem"])
def test_devices_and_kernel_files_are_refused(tmp_path: Path, device: str) -> None:
    with pytest.raises(TapeFormatError, match=r"not a tape file|a file of the kernel"):
        load_tape(device)
    link = tmp_path / "link.jsonl"
    link.symlink_to(device)
    with pytest.raises(TapeFormatError):
        load_tape(link)


def test_a_symlink_loop_is_not_found(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(TapeNotFoundError, match="symlink loop"):
        load_tape(a)


def test_a_line_over_the_cap_is_an_error_not_memory(tmp_path: Path, tape: Path) -> None:
    with pytest.raises(TapeFormatError, match=r"t\.jsonl:1: the line is longer than the cap of 100 bytes"):
        load_tape(tape, max_line_bytes=100)
    assert load_tape(tape).runs  # the default cap reads it


def _blob(tape: Path) -> Path:
    (blob,) = tape.with_name(tape.name + ".blobs").glob("*.json")
    return blob


def test_a_blob_is_checked_against_its_sha256_name(tape: Path) -> None:
    with replay(tape) as session, agent_run("a"):
        assert fetch("d1")["body"] == "x" * 300  # served whole from the blob
    assert session.stats["tape_hits"] == 1
    blob = _blob(tape)
    blob.write_text(blob.read_text().replace("x", "y"))
    with pytest.raises(TapeFormatError, match="does not match its sha256 name"), replay(tape), agent_run("a"):
        fetch("d1")


def test_a_blob_linked_to_a_device_is_refused(tape: Path) -> None:
    blob = _blob(tape)
    blob.unlink()
    blob.symlink_to("/dev/zero")
    with pytest.raises(TapeFormatError, match="blob"), replay(tape), agent_run("a"):
        fetch("d1")


def test_check_fails_a_tape_whose_every_line_was_skipped(tape: Path, tmp_path: Path) -> None:
    cr_only = tmp_path / "cr.jsonl"
    cr_only.write_bytes(tape.read_bytes().replace(b"\n", b"\r"))
    with pytest.warns(UserWarning, match="unterminated last line"):
        assert load_tape(cr_only).runs == ()
    assert main(["check", str(cr_only)]) == CHECK_FORMAT  # each skipped line is a finding (issue 11's check)


def test_the_parse_error_of_a_huge_line_names_its_column(tape: Path, tmp_path: Path) -> None:
    doc = orjson.loads(tape.read_text().splitlines()[0])
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    many = []
    for i in range(9000):  # a line of ~10 MB: read span by span, not parsed whole
        span = dict(spans[0])
        span["spanId"] = f"{i + 1:016x}"
        many.append(span)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = many
    text = orjson.dumps(doc).decode()
    at = text.index('},{"traceId"', len(text) // 2) + 2
    huge = tmp_path / "huge.jsonl"
    huge.write_text(text[:at] + "#" + text[at:] + "\n")
    assert huge.stat().st_size > 8 << 20
    with pytest.raises(TapeFormatError, match=rf"huge\.jsonl:1: invalid JSON \(Expecting value at column {at + 1}\)"):
        load_tape(huge)
