"""End to end through the real OpenTelemetry Collector (built by the Collector Builder) in front of the real Jaeger.

Its otlpjsonfile receiver reads a tape written by ``record()`` and forwards it to Jaeger unchanged; its
file exporter writes what it receives over OTLP as a file that ``load_tape`` reads and that replays
strictly. Both checked with the comparison a deliberate alteration shows to be strict.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.e2e_agent import SPANS, record_agent, replays_strictly, stored_view, tape_facts, trace_id_of
from helpers.go_servers import Collector, Jaeger, start_collector
from helpers.phoenix_server import listening_addresses
from helpers.trace_facts import Facts, differences, otlp_facts, read_jsonl

from otel_agent_replay import load_tape


@pytest.fixture
def collector(jaeger: Jaeger, tmp_path: Path) -> Iterator[Collector]:
    """A Collector of the test's own, so that its output file holds only the test's spans."""
    server = start_collector(tmp_path / "collector", jaeger)
    try:
        yield server
    finally:
        server.stop()


def _output(collector: Collector, trace_id: str, count: int, timeout: float = 30) -> Facts:
    """The file exporter's spans once ``count`` of the trace are there (it flushes every second)."""
    deadline = time.monotonic() + timeout
    while True:
        text = collector.out.read_text() if collector.out.exists() else ""
        complete = text[: text.rfind("\n") + 1]
        facts = otlp_facts(read_jsonl(complete))
        if sum(f["trace_id"] == trace_id for f in facts.values()) >= count:
            return facts
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the Collector wrote {len(facts)} of {count} spans after {timeout}s; log:\n{collector.log_tail()}"
            )
        time.sleep(0.25)


def test_a_tape_read_by_the_otlpjsonfile_receiver_reaches_jaeger_unchanged(
    jaeger: Jaeger, collector: Collector, tmp_path: Path
) -> None:
    tape = record_agent(tmp_path)  # offline: the Collector sends it on
    staged = collector.inbox / "run.jsonl.part"  # outside the receiver's *.jsonl until it is whole
    staged.write_bytes(tape.read_bytes())
    os.replace(staged, collector.inbox / "run.jsonl")
    expected = tape_facts(tape)
    trace_id = trace_id_of(tape)
    got = otlp_facts(jaeger.v3_trace(trace_id, SPANS))
    assert differences(stored_view(expected), got) == []
    # The Collector itself changed nothing, not even what Jaeger's storage then flattens.
    assert differences(expected, _output(collector, trace_id, SPANS)) == []


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_file_exporters_output_is_a_tape_that_replays(
    jaeger: Jaeger, collector: Collector, tmp_path: Path, protocol: str
) -> None:
    endpoint = collector.otlp_grpc if protocol == "grpc" else collector.otlp_http
    tape = record_agent(tmp_path, endpoint, protocol)
    expected = tape_facts(tape)
    trace_id = trace_id_of(tape)
    written = _output(collector, trace_id, SPANS)
    assert differences(expected, written) == []
    assert differences(stored_view(expected), otlp_facts(jaeger.v3_trace(trace_id, SPANS))) == []
    lines = collector.out.read_text().splitlines()
    assert len(lines) < SPANS  # the file exporter's format, many spans a line, not the tape's one a line
    loaded = load_tape(collector.out)
    (run,) = loaded.runs
    (recorded,) = load_tape(tape).runs
    assert run.run_id == recorded.run_id and [s.call_key for s in run.steps] == [s.call_key for s in recorded.steps]
    replays_strictly(collector.out, tmp_path)


def test_the_comparison_catches_a_change_in_the_collectors_output(collector: Collector, tmp_path: Path) -> None:
    tape = record_agent(tmp_path, collector.otlp_http)
    expected = tape_facts(tape)
    trace_id = trace_id_of(tape)
    _output(collector, trace_id, SPANS)
    text = collector.out.read_text()
    assert differences(expected, otlp_facts(read_jsonl(text))) == []
    (run,) = load_tape(tape).runs
    step = run.steps[1]
    start = str(expected[step.span_id]["start_ns"])
    changes = {
        "parent": (f'"parentSpanId":"{run.span_id}"', f'"parentSpanId":"{"0" * 15}1"', "parent_span_id"),
        "timestamp": (f'"startTimeUnixNano":"{start}"', f'"startTimeUnixNano":"{int(start) + 1000}"', "start_ns"),
        "attribute": (f'"stringValue":"{step.call_key}"', '"stringValue":"x:000000000000"', "agent_replay.call_key"),
        "trace id": (trace_id, "f" * 32, "trace_id"),
    }
    for label, (old, new, mark) in changes.items():
        assert old in text, (label, old)
        found = differences(expected, otlp_facts(read_jsonl(text.replace(old, new, 1))))
        assert found and any(mark in line for line in found), (label, found)


def test_the_collector_listens_on_loopback_only_on_the_ports_it_was_given(collector: Collector) -> None:
    addresses = listening_addresses(collector.process.pid)
    assert {port for _, port in addresses} == set(collector.ports.values())
    assert all(ipaddress.ip_address(host).is_loopback for host, _ in addresses), addresses
