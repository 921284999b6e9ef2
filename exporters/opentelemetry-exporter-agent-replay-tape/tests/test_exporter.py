"""The tape exporter: whole lines, many writers, crashes, failures that never reach the application."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.agent_replay_tape import TapeSpanExporter, TapeSpanProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult


def _provider(exporter: TapeSpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(TapeSpanProcessor(exporter))
    return provider


def _lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _span_names(path: Path) -> list[str]:
    return [
        span["name"]
        for doc in _lines(path)
        for rs in doc["resourceSpans"]  # type: ignore[attr-defined]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def test_every_ended_span_is_one_line_on_disk_at_once(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "tape.jsonl"
    exporter = TapeSpanExporter(path)
    tracer = _provider(exporter).get_tracer("t")
    for i in range(3):
        with tracer.start_as_current_span(f"s{i}"):
            pass
        # Written when the span ends, not at a later flush.
        assert len(path.read_bytes().splitlines()) == i + 1
    assert _span_names(path) == ["s0", "s1", "s2"]
    assert exporter.stats.spans_written == 3 and exporter.stats.spans_dropped == 0


def test_export_after_shutdown_fails_and_shutdown_is_idempotent(tmp_path: Path) -> None:
    exporter = TapeSpanExporter(tmp_path / "t.jsonl")
    provider = _provider(exporter)
    with provider.get_tracer("t").start_as_current_span("before"):
        pass
    exporter.shutdown()
    exporter.shutdown()
    spans = []
    other = TracerProvider()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    other.add_span_processor(SimpleSpanProcessor(memory))
    with other.get_tracer("t").start_as_current_span("after"):
        pass
    spans = list(memory.get_finished_spans())
    assert exporter.export(spans) is SpanExportResult.FAILURE
    assert _span_names(tmp_path / "t.jsonl") == ["before"]


def test_unwritable_path_never_raises_and_keeps_lines_pending(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a folder should be")
    exporter = TapeSpanExporter(blocker / "tape.jsonl")
    tracer = _provider(exporter).get_tracer("t")
    with tracer.start_as_current_span("kept"):
        pass  # the application goes on although the tape cannot be written
    stats = exporter.stats
    assert stats.write_failures == 1 and stats.spans_pending == 1 and stats.spans_written == 0
    blocker.unlink()  # the problem goes away: the pending line is written with the next one
    with tracer.start_as_current_span("next"):
        pass
    assert _span_names(blocker / "tape.jsonl") == ["kept", "next"]
    assert exporter.stats.spans_pending == 0 and exporter.stats.spans_dropped == 0


def test_pending_overflow_and_shutdown_losses_are_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "blocked"
    blocker.write_text("x")
    exporter = TapeSpanExporter(blocker / "tape.jsonl", max_pending_bytes=2000)
    tracer = _provider(exporter).get_tracer("t")
    for _ in range(20):
        with tracer.start_as_current_span("s"):
            pass
    assert exporter.stats.spans_dropped > 0
    before = exporter.stats.spans_dropped + exporter.stats.spans_pending
    assert before == 20
    exporter.shutdown()
    assert exporter.stats.spans_dropped == 20
    assert "could not be written" in caplog.text


def test_torn_last_line_is_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = TapeSpanExporter(path)
    tracer = _provider(exporter).get_tracer("t")
    with tracer.start_as_current_span("whole"):
        pass
    with path.open("ab") as fh:
        fh.write(b'{"resourceSpans":[{"resource":')  # a writer killed mid-line
    with tracer.start_as_current_span("after-crash"):
        pass
    assert _span_names(path) == ["whole", "after-crash"]
    assert exporter.stats.torn_bytes_removed == len(b'{"resourceSpans":[{"resource":')


_WRITER = textwrap.dedent(
    """
    import sys
    from opentelemetry.exporter.agent_replay_tape import TapeSpanExporter, TapeSpanProcessor
    from opentelemetry.sdk.trace import TracerProvider
    path, who, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    provider = TracerProvider()
    provider.add_span_processor(TapeSpanProcessor(TapeSpanExporter(path)))
    tracer = provider.get_tracer("w")
    payload = "x" * 5000
    for i in range(count):
        with tracer.start_as_current_span(f"{who}-{i}", attributes={"payload": payload}):
            pass
    provider.shutdown()
    """
)


def test_four_processes_appending_to_one_tape_leave_only_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    count = 400
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"p{n}", str(count)]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    names = _span_names(path)  # every line parses
    assert len(names) == 4 * count
    assert sorted(names) == sorted(f"p{n}-{i}" for n in range(4) for i in range(count))
    # Each process's spans are in its own order.
    for n in range(4):
        mine = [x for x in names if x.startswith(f"p{n}-")]
        assert mine == [f"p{n}-{i}" for i in range(count)]


def test_sigkill_mid_recording_loses_at_most_the_span_being_written(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "k", "10000000"])
    deadline = time.monotonic() + 60
    while (not path.exists() or path.stat().st_size < 2_000_000) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    names = [orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] for line in complete]
    assert names == [f"k-{i}" for i in range(len(names))]  # nothing missing before the kill
    assert len(names) > 100
    if tail:  # at most one partial line: the span being written
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(tail)


def test_entry_point_selects_the_exporter_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "from-env.jsonl"
    code = textwrap.dedent(
        """
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
        from opentelemetry import trace
        _OTelSDKConfigurator().configure()
        with trace.get_tracer("env").start_as_current_span("configured-by-env"):
            pass
        trace.get_tracer_provider().shutdown()
        """
    )
    env = dict(
        os.environ,
        OTEL_TRACES_EXPORTER="agent_replay_tape",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_EXPORTER_AGENT_REPLAY_TAPE_PATH=str(path),
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    assert _span_names(path) == ["configured-by-env"]
