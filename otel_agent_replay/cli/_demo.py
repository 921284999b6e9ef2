"""The demo agent: a four-step chain recorded to a tape.

Fetch a document, search an index, summarise with a stand-in model, write a report
file (the only side effect). Small sleeps stand in for network and model latency.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_agent_replay.core import ReplayDivergence
from otel_agent_replay.instrumentation import RunHandle, agent_run, model_call, tool
from otel_agent_replay.recorder import record
from otel_agent_replay.replayer import ReplaySession, replay

LATENCY = 0.02

_DOCUMENTS = {
    "doc-7": (
        "Quarterly support review. Ticket volume rose 12% while median first response fell to 41 minutes. "
        "Refund requests cluster around delayed shipments from the northern warehouse. "
        "Customers mention the new tracking page favourably. Escalations to engineering halved after the "
        "runbook update. Open risk: the carrier contract renews next month."
    )
}
_INDEX = {
    "refund": ["kb-12: refund policy for delayed shipments", "kb-40: warehouse delay playbook"],
    "carrier": ["kb-77: carrier contract checklist"],
}


@tool(side_effect="read_only", version="1")
def fetch_document(doc_id: str) -> dict[str, Any]:
    """Fetch a document by id (stands in for an HTTP GET)."""
    time.sleep(LATENCY)
    return {"id": doc_id, "status": 200, "text": _DOCUMENTS[doc_id]}


@tool(side_effect="read_only", version="1")
def search_index(query: str, limit: int = 3) -> list[str]:
    """Search the knowledge base index."""
    time.sleep(LATENCY)
    hits = [hit for word, found in _INDEX.items() if word in query.lower() for hit in found]
    return hits[:limit]


@model_call(provider="stand-in", model="tiny-summariser-1")
def summarise(text: str, related: list[str], max_words: int = 120) -> dict[str, Any]:
    """A stand-in model: keeps the first sentences within ``max_words``."""
    time.sleep(LATENCY * 2)
    words: list[str] = []
    for sentence in text.split(". "):
        extra = sentence.split()
        if len(words) + len(extra) > max_words:
            break
        words.extend(extra)
    summary = " ".join(words)
    if related:
        summary += f" See also: {', '.join(related)}."
    usage = {"input_tokens": len(text.split()) + 12, "output_tokens": len(summary.split())}
    return {"summary": summary, "usage": usage}


@tool(side_effect="write", version="1")
def write_report(path: str, body: str) -> dict[str, Any]:
    """Write the report file: the chain's only side effect."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body, encoding="utf-8")
    return {"path": path, "bytes": len(body.encode("utf-8"))}


def run_chain(doc_id: str, report_path: str, *, max_words: int = 120, extra_search: bool = False) -> dict[str, Any]:
    """The agent itself: four steps, the last one writes the report.

    When the document cannot be fetched it takes its degraded branch: no summary, no report.
    """
    doc = fetch_document(doc_id)
    if doc.get("status") != 200:
        return {"summary": None, "report": None, "error": f"upstream returned {doc.get('status')}"}
    related = search_index("refund policy")
    checks = {}
    if extra_search:  # a new version of the agent also checks the carrier contract
        checks["carrier_contract"] = len(search_index("carrier contract"))
    summary = summarise(doc["text"], related, max_words=max_words)
    written = write_report(report_path, f"# Report on {doc_id}\n\n{summary['summary']}\n")
    return {"summary": summary["summary"], "report": written, **checks}


@dataclass(frozen=True)
class DemoResult:
    """What the demo did: the tape, the run, and the agent's output."""

    tape: Path
    report: Path
    run_id: str
    output: dict[str, Any]


def record_demo(out_dir: str | Path) -> DemoResult:
    """Record one run of the chain to ``<out_dir>/tapes/demo.jsonl`` (a fresh tape)."""
    out = Path(out_dir)
    tape = out / "tapes" / "demo.jsonl"
    report = out / "report.md"
    tape.unlink(missing_ok=True)
    handle: RunHandle
    with (
        record(tape),
        agent_run("report-writer", agent_version="1.0", task="summarise doc-7", input={"doc_id": "doc-7"}) as handle,
    ):
        output = run_chain("doc-7", str(report))
        handle.set_output(output)
    return DemoResult(tape=tape, report=report, run_id=handle.run_id, output=output)


@dataclass(frozen=True)
class DemoPass:
    """One pass of the demo: what it showed, its replay stats, and the divergence it met."""

    name: str
    summary: str
    stats: dict[str, Any]
    error: str | None = None


def _attempt(tape: Path, report: Path, chain: dict[str, Any], **options: Any) -> tuple[dict[str, Any], str | None]:
    """Replay the chain with some change; the stats and the divergence it met, if any."""
    session: ReplaySession | None = None
    try:
        with replay(tape, **options) as session, agent_run("report-writer"):
            run_chain("doc-7", str(report), **chain)
    except ReplayDivergence as exc:
        assert session is not None
        return dict(session.stats), str(exc)
    assert session is not None
    return dict(session.stats), None


def run_demo(out_dir: str | Path) -> list[DemoPass]:
    """Record the chain, then replay it four ways: as recorded, with drift, with a miss, with an override."""
    recorded = record_demo(out_dir)
    tape, report = recorded.tape, recorded.report
    passes = [
        DemoPass("record", f"1 run, 4 steps recorded to {tape}; the report was written", {"mode": "record"}),
    ]

    report.unlink()
    with replay(tape, stub=("write_report",)) as r, agent_run("report-writer"):
        output = run_chain("doc-7", str(report))
    equal = output == recorded.output
    passes.append(
        DemoPass(
            "replay", f"result equal to the recording: {equal}; report file rewritten: {report.exists()}", dict(r.stats)
        )
    )

    stats, error = _attempt(tape, report, {"max_words": 80}, stub=("write_report",))
    passes.append(DemoPass("drift", "the model step asked for 80 words instead of 120", stats, error))

    stats, error = _attempt(tape, report, {"extra_search": True}, stub=("write_report",))
    passes.append(DemoPass("miss (strict)", "an extra search step that the tape does not have", stats, error))

    episodes = tape.with_name("demo-new-episodes.jsonl")
    episodes.write_bytes(tape.read_bytes())
    stats, error = _attempt(episodes, report, {"extra_search": True}, mode="new_episodes", stub=("write_report",))
    passes.append(
        DemoPass("miss (new_episodes)", f"only the new search ran live and was appended to {episodes}", stats, error)
    )
    with replay(episodes, stub=("write_report",)) as r, agent_run("report-writer"):
        run_chain("doc-7", str(report), extra_search=True)
    passes.append(DemoPass("replay (strict) of the appended tape", "the new search is now a hit", dict(r.stats)))

    with (
        replay(tape, overrides={"fetch_document": {"id": "doc-7", "status": 500, "text": ""}}, allow_unused=True) as r,
        agent_run("report-writer"),
    ):
        degraded = run_chain("doc-7", str(report))
    passes.append(
        DemoPass(
            "override",
            f"fetch returned an upstream 500; the agent answered {degraded['error']!r} with no report "
            f"written: {not report.exists()}",
            dict(r.stats),
        )
    )
    return passes
