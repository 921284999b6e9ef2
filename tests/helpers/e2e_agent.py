"""The agent the tests against the real servers record, and what they check its tapes with.

``record_agent`` runs it in a process of its own (its own service name, OTLP endpoint and protocol);
``stored_view`` is what Jaeger's Badger storage keeps of a span; ``replays_strictly`` replays the
demo chain from a tape with no live call.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from helpers.trace_facts import Facts, otlp_facts, read_jsonl
from otel_agent_replay import agent_run, load_tape, replay
from otel_agent_replay.cli._demo import run_chain

# The agent of these tests: the demo's four steps in a run, then two spans of the application's own
# (OpenTelemetry's API, another scope) with what Jaeger flattens or renames: a span kind, an error
# status, typed and array attributes, an event and a link. Run in its own process so that its service
# name and OTLP protocol are its own.
AGENT = """
import sys
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from otel_agent_replay import agent_run, record
from otel_agent_replay.cli._demo import run_chain

tape, endpoint, report = sys.argv[1:4]
with record(tape, otlp=endpoint or False, otlp_content=True), agent_run(
    "report-writer", agent_version="1.0", task="summarise doc-7", input={"doc_id": "doc-7"}
) as run:
    run.set_output(run_chain("doc-7", report))
    tracer = trace.get_tracer("agent-replay.e2e", "3.1")
    with tracer.start_as_current_span("prepare lookup", kind=SpanKind.PRODUCER) as prepare:
        cause = prepare.get_span_context()
    with tracer.start_as_current_span(
        "lookup customer",
        kind=SpanKind.CLIENT,
        links=[trace.Link(cause, {"link.reason": "prepared by", "n": 1})],
        attributes={"e2e.int": 42, "e2e.float": 0.25, "e2e.bool": True, "e2e.empty": "",
                    "e2e.strings": ["a", "b"], "e2e.ints": [1, 2]},
    ) as span:
        span.add_event("cache miss", {"cache.key": "c_17", "attempt": 2})
        span.set_status(Status(StatusCode.ERROR, "upstream 503"))
"""
SPANS = 7  # run, four steps, two spans of the application's


def record_agent(tmp: Path, endpoint: str = "", protocol: str = "http/protobuf", service: str = "agent-e2e") -> Path:
    """Run the agent above in a process of its own; the tape it recorded."""
    tape = tmp / "tapes" / "run.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_SERVICE_NAME=service, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    done = subprocess.run(
        [sys.executable, "-c", AGENT, str(tape), endpoint, str(tmp / "report.md")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "OtlpWarning" not in done.stderr, done.stderr
    return tape


def trace_id_of(tape: Path) -> str:
    (run,) = load_tape(tape).runs
    return run.trace_id


def stored_view(facts: Facts) -> Facts:
    """The facts as Jaeger's Badger storage keeps them (it stores Jaeger's classic span model).

    Array attributes become their JSON text, a link's attributes are replaced by the reference type
    Jaeger gives it, and the span's flags (W3C trace flags and the parent-is-remote bits) are dropped.
    Everything else must come back as it was sent, to the nanosecond.
    """
    out = copy.deepcopy(facts)
    for fact in out.values():
        fact["flags"] = 0
        fact["attributes"] = {
            k: orjson.dumps(v).decode() if isinstance(v, list) else v for k, v in fact["attributes"].items()
        }
        fact["links"] = [(t, s, {"opentracing.ref_type": "follows_from"}) for t, s, _ in fact["links"]]
    return out


def tape_facts(tape: Path) -> Facts:
    return otlp_facts(read_jsonl(tape.read_text()))


def replays_strictly(tape: Path, recorded_in: Path) -> dict[str, Any]:
    """Replay the demo chain from ``tape`` in strict mode, as ``record_agent(recorded_in)`` ran it; its stats."""
    report = recorded_in / "report.md"
    report.unlink()
    with replay(tape, stub=("write_report",)) as session, agent_run("report-writer"):
        run_chain("doc-7", str(report))
    assert not report.exists()  # write_report is answered from the tape: the real one never ran
    stats = dict(session.stats)
    assert stats["live_tool_calls"] == 0 and stats["real_side_effects"] == 0
    assert stats["tape_hits"] == 4 and stats["tape_misses"] == 0 and stats["unused_entries"] == 0
    return stats
