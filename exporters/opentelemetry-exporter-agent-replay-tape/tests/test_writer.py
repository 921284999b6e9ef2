"""The tape's file: a last line without its newline, disk full then freed, the file replaced under us."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.agent_replay_tape import LineEncoder, TapeSpanExporter, TapeSpanProcessor
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


# --- disk full, then space freed ----------------------------------------------------------------
#
# A child process lowers its own RLIMIT_FSIZE with SIGXFSZ ignored: a write that crosses the limit
# is cut short by the kernel and the next one fails with EFBIG, exactly like a disk that fills up
# mid-write. Raising the limit again is the space being freed. The test process has no limit, so it
# can play another writer appending to the same tape in between.

_CHILD = textwrap.dedent(
    """
    import dataclasses, json, logging, resource, signal, sys
    from opentelemetry.exporter.agent_replay_tape import LineEncoder, TapeSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail with EFBIG instead of being killed
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s")
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("child")
    exporter = TapeSpanExporter(sys.argv[1], max_pending_bytes=int(sys.argv[2]))
    encoder = LineEncoder()
    spans = {}
    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    for command in sys.stdin:
        verb, *args = command.split()
        if verb == "make":  # spans of ~5 KB, answered with the length of each one's line
            for name in args:
                with tracer.start_as_current_span(name, attributes={"payload": "x" * 5000}):
                    pass
            spans.update((span.name, span) for span in memory.get_finished_spans())
            memory.clear()
            reply = [len(encoder.encode(spans[name])) for name in args]
        elif verb == "export":
            reply = exporter.export([spans[name] for name in args]).name
        elif verb == "limit":
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard if args[0] == "none" else int(args[0]), hard))
            reply = "ok"
        elif verb == "shutdown":
            exporter.shutdown()
            reply = "ok"
        elif verb == "stats":
            reply = dataclasses.asdict(exporter.stats)
        print(json.dumps(reply), flush=True)
    """
)


class _Child:
    """A recording process whose file size limit the test moves; commands go one per line."""

    def __init__(self, path: Path, max_pending_bytes: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), str(max_pending_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def __call__(self, *command: str) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(" ".join(command) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, f"the child died: {self.finish()}"
        return json.loads(reply)

    def make(self, *names: str) -> list[int]:
        sizes: list[int] = self("make", *names)
        return sizes

    def finish(self) -> str:
        """Close the child's input, wait for it, and return what it logged."""
        _out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        return err


@pytest.fixture
def spawn() -> Iterator[Callable[..., _Child]]:
    """Starts children; kills those a failing test left running."""
    children: list[_Child] = []

    def start(path: Path, max_pending_bytes: int = 64 * 1024 * 1024) -> _Child:
        children.append(_Child(path, max_pending_bytes))
        return children[-1]

    yield start
    for child in children:
        if child.proc.poll() is None:
            child.proc.kill()
            child.proc.communicate(timeout=30)


# Where the first failing write stops inside the line it tears: bytes of that line on the file.
_CUTS: dict[str, Callable[[int], int]] = {
    "mid-line": lambda size: size // 2,
    "all-but-the-newline": lambda size: size - 1,
    "no-byte": lambda size: 0,
}


@pytest.mark.parametrize("cut", list(_CUTS))
def test_disk_full_then_freed_writes_every_span_exactly_once(
    tmp_path: Path, spawn: Callable[..., _Child], cut: str
) -> None:
    path = tmp_path / "full.jsonl"
    child = spawn(path)
    child.make("s0", "s1")
    assert child("export", "s0", "s1") == "SUCCESS"
    sizes = child.make("s2", "s3", "s4", "s5", "s6")
    start = path.stat().st_size
    # Space for s2 and s3, and part of s4: the batch is written in part.
    child("limit", str(start + sizes[0] + sizes[1] + _CUTS[cut](sizes[2])))
    assert child("export", "s2", "s3", "s4", "s5", "s6") == "FAILURE"
    stats = child("stats")
    assert (stats["spans_written"], stats["spans_pending"], stats["spans_dropped"]) == (4, 3, 0)
    # Some space freed: s4 and part of s5 fit; s7 waits behind them.
    child("limit", str(start + sum(sizes[:3]) + sizes[3] // 3))
    child.make("s7")
    assert child("export", "s7") == "FAILURE"
    child("limit", "none")  # all of it freed
    child.make("s8")
    assert child("export", "s8") == "SUCCESS"
    child("shutdown")
    stats = child("stats")
    log = child.finish()
    assert _tape_names(path) == [f"s{i}" for i in range(9)]
    assert stats["spans_written"] == 9 and stats["spans_pending"] == 0 and stats["spans_dropped"] == 0
    assert stats["write_failures"] == 2
    assert "could not write" in log and "File too large" in log


@pytest.mark.parametrize("cut", ["mid-line", "all-but-the-newline"])
def test_another_writer_between_a_torn_write_and_its_retry_neither_glues_nor_duplicates(
    tmp_path: Path, spawn: Callable[..., _Child], cut: str
) -> None:
    path = tmp_path / "shared.jsonl"
    child = spawn(path)
    sizes = child.make("c0", "c1", "c2")
    child("limit", str(sizes[0] + _CUTS[cut](sizes[1])))
    assert child("export", "c0", "c1", "c2") == "FAILURE"  # c0 whole, c1 torn
    other = TapeSpanExporter(path)  # this process has no file size limit
    other.export(_spans("other"))
    child("limit", "none")
    child.make("c3")
    assert child("export", "c3") == "SUCCESS"
    child("shutdown")
    stats = child("stats")
    child.finish()
    other.shutdown()
    names = _tape_names(path)
    assert sorted(names) == ["c0", "c1", "c2", "c3", "other"]
    assert [n for n in names if n != "other"] == ["c0", "c1", "c2", "c3"]
    assert stats["spans_written"] == 4 and stats["spans_dropped"] == 0
    # The other writer found c1 torn and cut it, or found it whole but for the newline and ended it.
    cut_by_other = other.stats.torn_bytes_removed
    assert cut_by_other == (_CUTS[cut](sizes[1]) if cut == "mid-line" else 0)


def test_disk_full_until_shutdown_counts_warns_and_leaves_no_torn_line(
    tmp_path: Path, spawn: Callable[..., _Child]
) -> None:
    path = tmp_path / "never-freed.jsonl"
    child = spawn(path)
    sizes = child.make("d0", "d1", "d2", "d3")
    child("limit", str(sizes[0] + sizes[1] // 2))
    assert child("export", "d0", "d1", "d2") == "FAILURE"
    assert child("export", "d3") == "FAILURE"
    child("shutdown")
    stats = child("stats")
    log = child.finish()
    assert _tape_names(path) == ["d0"]  # d1's torn part was cut: the tape ends in a whole line
    assert stats["spans_written"] == 1 and stats["spans_dropped"] == 3 and stats["spans_pending"] == 0
    assert "3 span(s) could not be written" in log


# --- the tape deleted or replaced during a recording ---------------------------------------------


def _record(exporter: TapeSpanExporter, *names: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(TapeSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for name in names:
        with tracer.start_as_current_span(name):
            pass


def test_a_tape_deleted_during_recording_is_created_again_and_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tapes" / "t.jsonl"
    exporter = TapeSpanExporter(path)
    _record(exporter, "a0", "a1", "a2")
    shutil.rmtree(path.parent)  # the whole folder, as `rm -rf tapes` does
    with caplog.at_level(logging.WARNING):
        _record(exporter, *(f"b{i}" for i in range(9)))
    exporter.shutdown()
    assert _tape_names(path) == [f"b{i}" for i in range(9)]
    assert exporter.stats.spans_written == 12 and exporter.stats.spans_dropped == 0
    assert exporter.stats.reopened == 1 and exporter.stats.spans_left_behind == 3
    (warning,) = [r.getMessage() for r in caplog.records if "deleted" in r.getMessage()]
    assert str(path) in warning and "3 span(s)" in warning


def test_a_tape_replaced_during_recording_is_reopened_and_appended_to(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t.jsonl"
    exporter = TapeSpanExporter(path)
    _record(exporter, "a0", "a1")
    rewritten = tmp_path / "t.jsonl.tmp"
    rewritten.write_bytes(LineEncoder().encode(_spans("kept-by-the-rewrite")[0]))
    os.replace(rewritten, path)  # another program rewrites the tape atomically
    with caplog.at_level(logging.WARNING):
        _record(exporter, *(f"b{i}" for i in range(9)))
    exporter.shutdown()
    assert _tape_names(path) == ["kept-by-the-rewrite", *(f"b{i}" for i in range(9))]
    assert exporter.stats.reopened == 1 and exporter.stats.spans_left_behind == 2
    (warning,) = [r.getMessage() for r in caplog.records if "replaced" in r.getMessage()]
    assert str(path) in warning and "2 span(s)" in warning


def test_a_tape_moved_away_is_not_written_to_under_its_new_name(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = TapeSpanExporter(path)
    _record(exporter, "a0")
    moved = tmp_path / "moved.jsonl"
    path.rename(moved)
    _record(exporter, "b0")
    exporter.shutdown()
    assert _tape_names(moved) == ["a0"]
    assert _tape_names(path) == ["b0"]


def test_a_tape_replaced_by_a_folder_fails_softly_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = TapeSpanExporter(path)
    _record(exporter, "a0")
    path.unlink()
    path.mkdir()  # nothing can be written there: the spans wait, the application goes on
    _record(exporter, "b0", "b1")
    assert exporter.stats.spans_pending == 2 and exporter.stats.write_failures == 2
    path.rmdir()
    _record(exporter, "b2")
    exporter.shutdown()
    assert _tape_names(path) == ["b0", "b1", "b2"]
    assert exporter.stats.spans_dropped == 0 and exporter.stats.spans_left_behind == 1


def test_a_full_pending_buffer_drops_the_oldest_spans_but_finishes_the_torn_one(
    tmp_path: Path, spawn: Callable[..., _Child]
) -> None:
    path = tmp_path / "overflow.jsonl"
    child = spawn(path, max_pending_bytes=12_000)  # about two lines
    sizes = child.make("o0", "o1", "o2")
    child("limit", str(sizes[0] + sizes[1] - 1))  # o1 torn just before its newline
    assert child("export", "o0", "o1", "o2") == "FAILURE"
    child.make("o3", "o4", "o5")
    for name in ("o3", "o4", "o5"):
        assert child("export", name) == "FAILURE"  # the buffer overflows: the oldest waiting go first
    child("limit", "none")
    child.make("o6")
    assert child("export", "o6") == "SUCCESS"
    child("shutdown")
    stats = child("stats")
    log = child.finish()
    names = _tape_names(path)
    assert names[:2] == ["o0", "o1"]  # the torn o1 was kept first and finished
    assert len(names) == len(set(names)) == stats["spans_written"]
    assert stats["spans_dropped"] > 0 and stats["spans_written"] + stats["spans_dropped"] == 7
    assert log.count("more than 12000 bytes of spans wait") == 1  # warned once, not per span
    assert f"{stats['spans_dropped']} were dropped while it was not" in log


# --- the tape changed underneath the writer by another process ----------------------------------


def _other_process(code: str, path: Path) -> None:
    """Change the tape from another process, as `truncate` or a shell redirection would."""
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


@pytest.mark.parametrize(
    ("cut", "kept"),
    [
        pytest.param("0", 0, id="to-zero"),
        pytest.param("os.path.getsize(p) // 2 + 37", 5, id="to-half-mid-line"),
    ],
)
def test_a_tape_cut_short_by_another_process_is_counted_warned_and_loses_nothing_still_held(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, cut: str, kept: int
) -> None:
    path = tmp_path / "t.jsonl"
    exporter = TapeSpanExporter(path)
    _record(exporter, *(f"a{i}" for i in range(10)))
    _other_process(f"import os, sys; p = sys.argv[1]; os.truncate(p, {cut})", path)
    with caplog.at_level(logging.WARNING):
        _record(exporter, *(f"b{i}" for i in range(5)))
    exporter.shutdown()
    # What was left stays, a torn line is cut, and every span written after the cut is there.
    assert _tape_names(path) == [*(f"a{i}" for i in range(kept)), *(f"b{i}" for i in range(5))]
    stats = exporter.stats
    assert stats.changed_underneath == 1 and stats.spans_lost == 10 - kept
    assert stats.spans_written == 15 and stats.spans_dropped == 0 and stats.moved_aside == ()
    (warning,) = [r.getMessage() for r in caplog.records if "another process" in r.getMessage()]
    assert str(path) in warning and "cut short" in warning and f"{10 - kept} span(s)" in warning


@pytest.mark.parametrize("length", [pytest.param(8, id="short"), pytest.param(200_000, id="longer-than-the-tape")])
def test_a_tape_overwritten_with_a_garbage_line_is_moved_aside_and_the_recording_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, length: int
) -> None:
    path = tmp_path / "t.jsonl"
    exporter = TapeSpanExporter(path)
    _record(exporter, *(f"a{i}" for i in range(4)))
    garbage = b"g" * (length - 1) + b"\n"
    _other_process(f"import sys; open(sys.argv[1], 'wb').write(b'g' * {length - 1} + b'\\n')", path)
    with caplog.at_level(logging.WARNING):
        _record(exporter, "b0", "b1")
    exporter.shutdown()
    aside = tmp_path / "t.jsonl.changed-1"
    assert aside.read_bytes() == garbage  # what the other process wrote is kept, not deleted
    assert _tape_names(path) == ["b0", "b1"]  # the tape at the path loads
    stats = exporter.stats
    assert stats.changed_underneath == 1 and stats.spans_lost == 4 and stats.moved_aside == (str(aside),)
    (warning,) = [r.getMessage() for r in caplog.records if "another process" in r.getMessage()]
    assert "overwritten" in warning and str(aside) in warning


def test_another_writer_appending_is_not_a_change_underneath(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first, second = TapeSpanExporter(path), TapeSpanExporter(path)
    for i in range(3):
        _record(first, f"a{i}")
        _record(second, f"b{i}")
    first.shutdown()
    second.shutdown()
    assert _tape_names(path) == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert first.stats.changed_underneath == second.stats.changed_underneath == 0
