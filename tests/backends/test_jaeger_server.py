"""End to end against the real Jaeger v2 (built from its Go module, Badger storage, loopback ports).

A run recorded with ``record(otlp=...)`` over http/protobuf and over gRPC, and a tape pushed after the
fact, read back from Jaeger's api/v3 and classic API with the tape's ids, parents, names, timestamps,
service, attributes, events and links, except for what Jaeger's Badger storage cannot hold (listed in
``e2e_agent.stored_view``). ``otel-agent-replay pull`` from it gives tapes that replay strictly with no live call.
A deliberately altered copy shows the comparison would catch a change.
"""

from __future__ import annotations

import copy
import datetime as _dt
import ipaddress
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from helpers.e2e_agent import SPANS, record_agent, replays_strictly, stored_view, tape_facts, trace_id_of
from helpers.go_servers import COLLECTOR_CONFIG, JAEGER_CONFIG, ROOT, Jaeger, start_jaeger
from helpers.phoenix_server import listening_addresses
from helpers.trace_facts import classic_facts, classic_view, differences, otlp_facts, read_jsonl

from otel_agent_replay import load_tape


def _script() -> str:
    return str(Path(sys.executable).with_name("otel-agent-replay"))


def _pull(jaeger: Jaeger, out: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [_script(), "pull", "--jaeger", jaeger.query_url, "-o", str(out), "--json", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answer = orjson.loads(done.stdout)
    assert isinstance(answer, dict)
    return answer


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_recorded_run_reads_back_from_jaeger_as_on_the_tape(jaeger: Jaeger, tmp_path: Path, protocol: str) -> None:
    service = f"agent-e2e-{uuid.uuid4().hex[:8]}"
    endpoint = jaeger.otlp_http if protocol == "http/protobuf" else jaeger.otlp_grpc
    tape = record_agent(tmp_path, endpoint, protocol, service)
    expected = tape_facts(tape)
    assert len(expected) == SPANS
    trace_id = trace_id_of(tape)

    got = otlp_facts(jaeger.v3_trace(trace_id, SPANS))
    assert differences(stored_view(expected), got) == []
    assert differences(classic_view(stored_view(expected)), classic_facts(jaeger.classic_trace(trace_id))) == []

    # What the comparison covered, said plainly: the tree, the service, the GenAI and agent_replay attributes.
    (run,) = load_tape(tape).runs
    assert {f["parent_span_id"] for sid, f in got.items() if sid != run.span_id} == {run.span_id}
    assert {f["resource"]["service.name"] for f in got.values()} == {service}
    status, services = jaeger.get("/api/services")
    assert status == 200 and service in services["data"]
    for step in run.steps:
        attrs = got[step.span_id]["attributes"]
        assert attrs["agent_replay.call_key"] == step.call_key and attrs["agent_replay.step_id"] == step.step_id
        assert attrs["gen_ai.operation.name"] in ("execute_tool", "chat")
    assert got[run.span_id]["attributes"]["gen_ai.agent.name"] == "report-writer"
    (lookup,) = [f for f in got.values() if f["name"] == "lookup customer"]
    assert (
        lookup["kind"] == 3
        and lookup["status"] == (2, "upstream 503")
        and lookup["scope"] == ("agent-replay.e2e", "3.1")
    )
    assert lookup["events"][0][1:] == ("cache miss", {"cache.key": "c_17", "attempt": 2})


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_tape_pushed_later_keeps_its_original_timestamps(jaeger: Jaeger, tmp_path: Path, protocol: str) -> None:
    tape = record_agent(tmp_path)  # offline: no OTLP
    endpoint = jaeger.otlp_http if protocol == "http/protobuf" else jaeger.otlp_grpc
    done = subprocess.run(
        [_script(), "push", str(tape), "--endpoint", endpoint, "--protocol", protocol, "--content", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    pushed = orjson.loads(done.stdout)
    assert pushed["spans"] == SPANS and pushed["rejected"] == 0
    expected = tape_facts(tape)
    got = otlp_facts(jaeger.v3_trace(trace_id_of(tape), SPANS))
    assert differences(stored_view(expected), got) == []
    times = {key: (f["start_ns"], f["end_ns"]) for key, f in got.items()}
    assert times == {key: (f["start_ns"], f["end_ns"]) for key, f in expected.items()}  # the recording's, to the ns


def test_pull_by_trace_id_gives_a_tape_that_replays_strictly(jaeger: Jaeger, tmp_path: Path) -> None:
    tape = record_agent(tmp_path, jaeger.otlp_http)
    trace_id = trace_id_of(tape)
    jaeger.v3_trace(trace_id, SPANS)
    pulled = tmp_path / "pulled.jsonl"
    answer = _pull(jaeger, pulled, "--trace-id", trace_id)
    assert answer["spans"] == SPANS
    assert differences(stored_view(tape_facts(tape)), tape_facts(pulled)) == []
    (run,) = load_tape(pulled).runs
    assert [s.call_key for s in run.steps] == [s.call_key for s in load_tape(tape).runs[0].steps]
    replays_strictly(pulled, tmp_path)


def test_pull_by_service_and_time_range_takes_only_that_window(jaeger: Jaeger, tmp_path: Path) -> None:
    service = f"agent-window-{uuid.uuid4().hex[:8]}"
    before = record_agent(tmp_path / "before", jaeger.otlp_http, service=service)
    time.sleep(1.5)
    since = _dt.datetime.now(_dt.timezone.utc)
    inside = record_agent(tmp_path / "inside", jaeger.otlp_http, service=service)
    until = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=1)
    for tape in (before, inside):
        jaeger.v3_trace(trace_id_of(tape), SPANS)
    pulled = tmp_path / "window.jsonl"
    _pull(jaeger, pulled, "--service", service, "--since", since.isoformat(), "--until", until.isoformat())
    assert {f["trace_id"] for f in tape_facts(pulled).values()} == {trace_id_of(inside)}
    assert differences(stored_view(tape_facts(inside)), tape_facts(pulled)) == []
    replays_strictly(pulled, tmp_path / "inside")
    everything = tmp_path / "all.jsonl"
    _pull(jaeger, everything, "--service", service, "--lookback", "1h")
    assert {f["trace_id"] for f in tape_facts(everything).values()} == {trace_id_of(before), trace_id_of(inside)}


def test_what_jaeger_flattens_comes_back_after_pull(jaeger: Jaeger, tmp_path: Path) -> None:
    tape = record_agent(tmp_path, jaeger.otlp_grpc, "grpc")
    trace_id = trace_id_of(tape)
    jaeger.v3_trace(trace_id, SPANS)
    expected = stored_view(tape_facts(tape))
    classic = classic_facts(jaeger.classic_trace(trace_id))
    (lookup_id,) = [sid for sid, f in expected.items() if f["name"] == "lookup customer"]
    tags = classic[lookup_id]["attributes"]
    assert "span.kind" not in tags and "otel.scope.name" not in tags  # classic_facts moved them back, so …
    raw = {
        t["key"]: t["value"]
        for s in jaeger.classic_trace(trace_id)["data"][0]["spans"]
        for t in s["tags"]
        if s["spanID"] == lookup_id
    }
    # … this is what Jaeger's classic JSON makes of the span: OTLP fields as tags, arrays as text.
    assert raw["span.kind"] == "client" and raw["otel.status_code"] == "ERROR" and raw["error"] is True
    assert raw["otel.scope.name"] == "agent-replay.e2e" and raw["e2e.strings"] == '["a","b"]'
    for api in ("v3", "classic"):
        pulled = tmp_path / f"pulled-{api}.jsonl"
        _pull(jaeger, pulled, "--trace-id", trace_id, "--api", api)
        got = tape_facts(pulled)
        if api == "v3":
            assert differences(expected, got) == []
        else:  # the classic API has microseconds, and links without attributes
            assert differences(classic_view(expected), classic_view(got)) == []
        lookup = got[lookup_id]
        assert lookup["kind"] == 3 and lookup["status"] == (2, "upstream 503")
        assert lookup["scope"] == ("agent-replay.e2e", "3.1")
        assert {k: lookup["attributes"][k] for k in ("e2e.int", "e2e.float", "e2e.bool", "e2e.empty")} == {
            "e2e.int": 42,
            "e2e.float": 0.25,
            "e2e.bool": True,
            "e2e.empty": "",
        }
        assert [e[1:] for e in lookup["events"]] == [("cache miss", {"cache.key": "c_17", "attempt": 2})]
        assert [lk[:2] for lk in lookup["links"]] == [lk[:2] for lk in expected[lookup_id]["links"]]
        replays_strictly(pulled, tmp_path)
        (tmp_path / "report.md").write_text("recorded")


def _first_span(doc: dict[str, Any], name: str) -> dict[str, Any]:
    spans: list[dict[str, Any]] = [
        s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"] if s["name"] == name
    ]
    return spans[0]


def test_the_comparison_catches_a_changed_id_parent_timestamp_or_attribute(jaeger: Jaeger, tmp_path: Path) -> None:
    tape = record_agent(tmp_path, jaeger.otlp_http)
    trace_id = trace_id_of(tape)
    answer = jaeger.v3_trace(trace_id, SPANS)
    expected = stored_view(tape_facts(tape))
    assert differences(expected, otlp_facts(answer)) == []  # the checker passes on the genuine answer …

    def altered(change: Any) -> list[str]:
        docs = copy.deepcopy(answer)
        change(docs[0])
        return differences(expected, otlp_facts(docs))

    tool = "execute_tool search_index"
    cases = {
        "span id": (lambda d: _first_span(d, tool).update(spanId="00000000000000ff"), "is missing"),
        "trace id": (lambda d: _first_span(d, tool).update(traceId="0" * 31 + "1"), "trace_id"),
        "parent": (lambda d: _first_span(d, tool).update(parentSpanId="00000000000000ff"), "parent_span_id"),
        "start": (
            lambda d: _first_span(d, tool).update(
                startTimeUnixNano=str(int(_first_span(d, tool)["startTimeUnixNano"]) + 1)
            ),
            "start_ns",
        ),
        "attribute": (
            lambda d: next(a for a in _first_span(d, tool)["attributes"] if a["key"] == "agent_replay.seq")[
                "value"
            ].update(intValue="99"),
            "attributes[agent_replay.seq]",
        ),
        "event time": (lambda d: _first_span(d, "lookup customer")["events"][0].update(timeUnixNano="1"), "events"),
    }
    for label, (change, mark) in cases.items():  # … and fails on each altered copy, naming what changed
        found = altered(change)
        assert found and any(mark in line for line in found), (label, found)

    classic = jaeger.classic_trace(trace_id)
    assert differences(classic_view(expected), classic_facts(classic)) == []
    broken = copy.deepcopy(classic)
    broken["data"][0]["spans"][0]["startTime"] += 1
    assert any("start_us" in line for line in differences(classic_view(expected), classic_facts(broken)))

    pulled = tmp_path / "pulled.jsonl"
    _pull(jaeger, pulled, "--trace-id", trace_id)
    text = pulled.read_text()
    step = load_tape(tape).runs[0].steps[0]
    assert differences(expected, otlp_facts(read_jsonl(text))) == []
    assert differences(expected, otlp_facts(read_jsonl(text.replace(step.span_id, "0" * 15 + "f"))))


def test_jaeger_listens_on_loopback_only_on_the_ports_it_was_given(jaeger: Jaeger) -> None:
    addresses = listening_addresses(jaeger.process.pid)
    assert {port for _, port in addresses} == set(jaeger.ports.values())
    for host, _ in addresses:
        assert ipaddress.ip_address(host).is_loopback, addresses
    assert "v2.13.0" in jaeger.log.read_text()  # the pinned release, as scripts/servers.sh built it
    assert list(jaeger.badger_dir.glob("*/MANIFEST")), "Badger keeps its files where the config says"


def test_traces_outlive_a_restart_of_jaeger(tmp_path: Path) -> None:
    first = start_jaeger(tmp_path / "jaeger")
    try:
        tape = record_agent(tmp_path, first.otlp_http)
        first.v3_trace(trace_id_of(tape), SPANS)
    finally:
        first.stop()
    assert first.process.returncode is not None
    second = start_jaeger(tmp_path / "jaeger")  # the same Badger folder, as the compose volume keeps it
    try:
        assert second.badger_dir == first.badger_dir
        got = otlp_facts(second.v3_trace(trace_id_of(tape), SPANS, timeout=5))
        assert differences(stored_view(tape_facts(tape)), got) == []
    finally:
        second.stop()


def test_compose_runs_the_versions_and_the_files_the_tests_run() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "servers.sh"), "versions"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    pinned = dict(line.split("=", 1) for line in done.stdout.split())
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["jaeger"]["image"] == f"jaegertracing/jaeger:{pinned['jaeger']}"
    assert services["collector"]["image"] == f"otel/opentelemetry-collector-contrib:{pinned['collector_contrib']}"
    mounted = {Path(v.split(":")[0]).resolve() for s in services.values() for v in s["volumes"] if v.startswith("./")}
    assert {JAEGER_CONFIG, COLLECTOR_CONFIG} <= mounted
    assert "jaeger-data" in compose["volumes"] and "badger" in JAEGER_CONFIG.read_text()
