"""End to end against a real OTLP backend, Arize Phoenix (started on loopback ports for this module).

A recorded demo run exported live, and a tape pushed after the fact, arrive with the ids, parent
links, timestamps and attributes the tape has; a dead endpoint costs the agent nothing but a warning.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.otlp_receiver import closed_port
from helpers.phoenix_server import Phoenix, listening_addresses, start_phoenix
from helpers.rawtape import RawSpan, raw_spans

from otel_agent_replay import load_tape
from otel_agent_replay.backends import push
from otel_agent_replay.cli._demo import record_demo
from otel_agent_replay.core import attributes as A

PROJECT_ATTRIBUTE = "openinference.project.name"  # Phoenix files spans under this resource attribute


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    server = start_phoenix(tmp_path_factory.mktemp("phoenix"))
    try:
        yield server
    finally:
        server.stop()


def _script() -> str:
    return str(Path(sys.executable).with_name("otel-agent-replay"))


def _micros(text: str) -> int:
    when = _dt.datetime.fromisoformat(text)
    return int(when.timestamp()) * 1_000_000 + when.microsecond


def _same_as_tape(received: list[dict[str, Any]], on_tape: list[RawSpan], *, content: bool = True) -> None:
    """Every tape span arrived once, with its ids, parent, name, start time and attributes."""
    by_id = {span["context"]["span_id"]: span for span in received}
    assert sorted(by_id) == sorted(s.span_id for s in on_tape) and len(received) == len(on_tape)
    for raw in on_tape:
        got = by_id[raw.span_id]
        assert got["context"]["trace_id"] == raw.span["traceId"]
        assert (got["parent_id"] or "") == raw.parent_span_id
        assert got["name"] == raw.name
        assert abs(_micros(got["start_time"]) - int(raw.span["startTimeUnixNano"]) / 1000) <= 1  # Phoenix keeps µs
        expected = {k: v for k, v in raw.attrs.items() if content or k not in A.CONTENT_ATTRIBUTES}
        # Phoenix adds OpenInference attributes of its own (tool.name, input.value …) beside ours.
        assert {k: got["attributes"].get(k) for k in expected} == expected
        if not content:
            assert not set(got["attributes"]) & A.CONTENT_ATTRIBUTES
        assert got["status_code"] == ("ERROR" if raw.span.get("status", {}).get("code") == 2 else "UNSET")


def test_a_demo_run_recorded_with_otlp_on_arrives_whole(phoenix: Phoenix, tmp_path: Path) -> None:
    project = f"e2e-{uuid.uuid4().hex[:8]}"
    env = dict(
        os.environ,
        OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.url,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_SERVICE_NAME="agent-e2e",
        OTEL_RESOURCE_ATTRIBUTES=f"{PROJECT_ATTRIBUTE}={project},deployment.environment=ci",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
    )
    done = subprocess.run(
        [_script(), "demo", "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "OtlpWarning" not in done.stderr
    tape = tmp_path / "tapes" / "demo.jsonl"
    on_tape = raw_spans(tape)
    assert len(on_tape) == 5
    received = phoenix.wait_for_spans(project, None, len(on_tape))
    _same_as_tape(received, on_tape)
    (run,) = load_tape(tape).runs  # one root, the run span: the hierarchy survived the trip
    assert [s["context"]["span_id"] for s in received if s["parent_id"] is None] == [run.span_id]


def test_content_stays_home_when_the_switch_is_off(phoenix: Phoenix, tmp_path: Path) -> None:
    project = f"e2e-off-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k != "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.url, OTEL_RESOURCE_ATTRIBUTES=f"{PROJECT_ATTRIBUTE}={project}")
    done = subprocess.run(
        [_script(), "demo", "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    on_tape = raw_spans(tmp_path / "tapes" / "demo.jsonl")
    assert all(A.GEN_AI_TOOL_CALL_ARGUMENTS in s.attrs for s in on_tape if s.name.startswith("execute_tool"))
    received = phoenix.wait_for_spans(project, None, len(on_tape))
    _same_as_tape(received, on_tape, content=False)
    assert "Quarterly support review" not in str(received)  # no argument or result, not even derived ones
    assert "Quarterly support review" in (tmp_path / "tapes" / "demo.jsonl").read_text()


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_pushed_tape_reads_back_with_its_ids_and_hierarchy(phoenix: Phoenix, tmp_path: Path, protocol: str) -> None:
    demo = record_demo(tmp_path)
    on_tape = raw_spans(demo.tape)
    (run,) = load_tape(demo.tape).runs
    endpoint = phoenix.url if protocol == "http/protobuf" else phoenix.grpc_url
    result = push(demo.tape, endpoint, protocol=protocol, content=True)
    assert result.spans == len(on_tape) == 5 and result.rejected == 0
    received = phoenix.wait_for_spans("default", run.trace_id, len(on_tape))
    _same_as_tape(received, on_tape)
    by_id = {s["context"]["span_id"]: s for s in received}
    for step in run.steps:  # the step tree: every step hangs under the run span
        assert by_id[step.span_id]["parent_id"] == run.span_id
        assert by_id[step.span_id]["attributes"][A.CALL_KEY] == step.call_key


def test_the_agent_finishes_with_a_warning_while_the_endpoint_refuses(tmp_path: Path) -> None:
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    done = subprocess.run(
        [_script(), "demo", "--out", str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "OtlpWarning" in done.stderr and "refused" in done.stderr.lower() and "5 of 5 span(s)" in done.stderr
    assert "write_report#1" in done.stdout  # the demo went on as usual
    (run,) = load_tape(tmp_path / "tapes" / "demo.jsonl").runs
    assert run.complete and len(run.steps) == 4


def test_phoenix_listens_on_loopback(phoenix: Phoenix) -> None:
    addresses = listening_addresses(phoenix.process.pid)
    ports = {int(phoenix.url.rsplit(":", 1)[1]), int(phoenix.grpc_url.rsplit(":", 1)[1])}
    assert {port for _, port in addresses} >= ports
    assert all(_loopback(host) for host, _ in addresses), addresses


def _loopback(host: str) -> bool:
    address = ipaddress.ip_address(host)
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)
