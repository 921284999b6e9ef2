"""The report page of repeated runs, opened in headless chromium: with 100-character case labels every
chart draws its bars (pixels of the bars' colours inside each chart's area, read back from the canvas),
the per-case table holds each case's input, both sides' intervals and the p-value, metrics with no data
get no chart, and a bidirectional control in a label reaches neither the page nor the terminal.

The store is real: a support agent (the real ``openai`` SDK against the fake provider on 127.0.0.1,
whose answers follow a fixed pattern per case and version) is recorded once per case, then
``regress(..., repeat=8, models="live")`` runs each case 8 times under v1 and under v2."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from helpers.headless import render
from helpers.model_server import FakeProvider, fake_provider

from otel_agent_replay import agent_run, record, regress, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._output import PipeConsole
from otel_agent_replay.comparison import RunView
from otel_agent_replay.core import visible
from otel_agent_replay.pages import chart_label
from otel_agent_replay.store import CaseVerdict, Evaluation, open_store, report_rows

K = 8
URL_ENV = "AGENT_REPLAY_SUPPORT_URL"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
"""Every bidirectional control the pages and the terminal must neutralise."""


_COMMON = "the customer writes that the order arrived damaged and asks for a refund to the card they paid with; "


def _task(prefix: str, suffix: str) -> str:
    """A realistic case label of exactly 100 characters."""
    middle = (_COMMON * 2)[: 100 - len(prefix) - len(suffix)]
    return prefix + middle + suffix


TASKS = {
    "steady": _task("Refund: ", " answer kindly."),
    "broken": _task("Refund: ", " answer fast."),  # differs from steady in its last characters only
    "coin": _task("Refund \u202eevil\u202c \u2067iso\u2069 \u200fm\u200e \u061c \u202a\u202b\u202d\u2066\u2068 ", "."),
}
KEYS = {task: key for key, task in TASKS.items()}
PATTERNS = {
    ("steady", "v1"): "y", ("steady", "v2"): "y",
    ("broken", "v1"): "y", ("broken", "v2"): "ynnnnnnn",  # 8/8 against 1/8: regressed
    ("coin", "v1"): "yn", ("coin", "v2"): "ny",  # 4/8 against 4/8: flaky
}  # fmt: skip


@tool(side_effect="read_only")
def policy_of(case: str) -> str:
    return f"refund policy for {case}: within 30 days"


def _support(task: str, version: str) -> dict[str, Any]:
    with agent_run("support-long", agent_version=version, task=task, input={"task": task}) as run:
        key = KEYS[task]
        policy = policy_of(key)
        client = openai.OpenAI(base_url=os.environ[URL_ENV] + "/v1", api_key="sk-test-support", max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"quiz case={key} version={version}: {policy}"}]
        )
        output = {"answer": reply.choices[0].message.content}
        run.set_output(output)
        return output


def support_v1(task: str) -> dict[str, Any]:
    return _support(task, "v1")


def support_v2(task: str) -> dict[str, Any]:
    return _support(task, "v2")


def right_answer(view: RunView) -> Evaluation:
    output = view.final_output if isinstance(view.final_output, dict) else {}
    passed = output.get("answer") == "right"
    return Evaluation("right_answer", score=1.0 if passed else 0.0, passed=passed)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SQLite store with 8 runs of each case under v1 and v2."""
    folder = tmp_path_factory.mktemp("suite")
    db = str(folder / "evidence.db")
    with fake_provider() as provider, pytest.MonkeyPatch.context() as patch:
        patch.setenv(URL_ENV, provider.url)
        _fill(provider, folder, db)
        yield db


def _fill(provider: FakeProvider, folder: Path, db: str) -> None:
    provider.odds.update(PATTERNS)
    provider.odds.update({(key, "v0"): "y" for key in TASKS})
    for key, task in TASKS.items():
        with record(folder / f"{key}.jsonl"):
            _support(task, "v0")
    for agent, version in ((support_v1, "v1"), (support_v2, "v2")):
        result = regress(
            folder, agent, agent_version=version, store=db, evaluators=[right_answer], models="live", repeat=K
        )
        assert len(result.cases) == K * len(TASKS)


_PROBE = """(() => {
  const canvases = Array.from(document.querySelectorAll('canvas')).map((c) => {
    const chart = Chart.getChart(c);
    if (!chart) { return { id: c.id, drawn: false }; }
    const hex = new Set();
    chart.data.datasets.forEach((d) => [].concat(d.backgroundColor).forEach((h) => hex.add(String(h).toLowerCase())));
    const rgb = Array.from(hex).map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));
    const ratio = c.width / c.clientWidth, a = chart.chartArea;
    const x0 = Math.floor(a.left * ratio), y0 = Math.floor(a.top * ratio);
    const w = Math.max(1, Math.floor((a.right - a.left) * ratio));
    const h = Math.max(1, Math.floor((a.bottom - a.top) * ratio));
    const px = c.getContext('2d').getImageData(x0, y0, w, h).data;
    let bars = 0;
    for (let i = 0; i < px.length; i += 4) {
      const same = ([r, g, b]) => px[i] === r && px[i + 1] === g && px[i + 2] === b;
      if (px[i + 3] === 255 && rgb.some(same)) { bars += 1; }
    }
    return { id: c.id, drawn: true, bars: bars, area: a.bottom - a.top, height: c.clientHeight,
             labels: chart.data.labels };
  });
  const rows = Array.from(document.querySelectorAll('#cases tr[data-case]')).map((tr) => ({
    case: tr.dataset.case,
    input: tr.querySelector('td.input').textContent,
    title: tr.querySelector('td.input').title,
    rates: Array.from(tr.querySelectorAll('td.rate')).map((td) => td.textContent),
    p: tr.querySelector('td.p-value') ? tr.querySelector('td.p-value').textContent : null,
    verdict: tr.querySelector('td.verdict') ? tr.querySelector('td.verdict').textContent : null,
  }));
  const data = JSON.parse(document.getElementById('page-data').textContent);
  return { canvases: canvases, rows: rows, text: document.body.innerText, charts: data.charts };
})()"""


def _opened(page: Path) -> dict[str, Any]:
    rendered = render(page, probe=_PROBE)
    assert rendered.requests == () and rendered.refused == ()
    probe: dict[str, Any] = rendered.probe
    assert probe["canvases"], "the page has no chart"
    for canvas in probe["canvases"]:
        assert canvas["drawn"], f"{canvas['id']}: Chart.js did not draw it"
        # the bars have room (long labels did not eat the chart) and are drawn in their colours
        assert canvas["area"] >= 0.5 * canvas["height"], canvas
        assert canvas["bars"] >= 200, f"{canvas['id']}: no bar drawn ({canvas['bars']} pixels of the bars' colours)"
    return probe


def _task_of(stored_input: str | None) -> str:
    return str(orjson.loads(stored_input or "{}")["task"])


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def test_the_report_page_with_100_character_case_labels_draws_every_chart_and_holds_the_per_case_rows(
    store: str, tmp_path: Path
) -> None:
    page = tmp_path / "compare.html"
    assert main(["report", "--db", store, "--compare", "v1", "v2", "--format", "html", "-o", str(page)]) == 0
    probe = _opened(page)
    ids = {c["id"] for c in probe["canvases"]}
    assert {"chart-verdicts", "chart-case-rates", "chart-pass_rate", "chart-sessions"} <= ids
    # metrics with no data get no empty frame: no retry, no out-of-bounds call here
    assert not ids & {"chart-retry_rate", "chart-out_of_bounds_calls"}
    assert "not charted (no value above zero): retry rate, out-of-bounds calls" in probe["text"]

    with open_store(store) as opened:
        cases = report_rows(opened, compare=("v1", "v2")).cases
    assert cases is not None
    verdicts = {KEYS[_task_of(c.baseline.input)]: c.verdict for c in cases.comparisons}
    assert verdicts == {"steady": CaseVerdict.PASS, "broken": CaseVerdict.REGRESSED, "coin": CaseVerdict.FLAKY}
    rows = {row["case"]: row for row in probe["rows"]}
    assert set(rows) == {c.case_id for c in cases.comparisons}
    for c in cases.comparisons:
        row = rows[c.case_id]
        assert row["title"] == visible(_task_of(c.baseline.input)), "the whole input on hover"
        assert 20 <= len(row["input"]) <= 60 and row["input"].endswith("…"), row["input"]
        assert visible(_task_of(c.baseline.input)).startswith(row["input"][:-1]), "the input, shortened"
        for side, cell in zip((c.baseline, c.candidate), row["rates"], strict=True):
            assert cell.startswith(f"{side.passes}/{side.runs} {_pct(side.rate)}")
            assert f"[{_pct(side.low)}, {_pct(side.high)}]" in cell, "the interval"
        assert c.p_value is not None and row["p"] == f"{c.p_value:.2g}"
        assert row["verdict"] == c.verdict.value
    broken = rows[next(c.case_id for c in cases.comparisons if c.verdict == CaseVerdict.REGRESSED)]
    assert broken["rates"][0].startswith("8/8 100%") and broken["rates"][1].startswith("1/8 12%")
    assert float(broken["p"]) < 0.05

    # the rate chart's labels are the inputs, short; the tooltips hold them whole
    spec = next(s for s in probe["charts"] if s["canvas"] == "chart-case-rates")
    full = {" ".join(lines) for lines in spec["full"]}
    assert {TASKS["steady"], TASKS["broken"]} <= full
    assert all(isinstance(label, list) and len(label) <= 2 and max(map(len, label)) <= 16 for label in spec["labels"])
    assert len({tuple(label) for label in spec["labels"]}) == len(TASKS), "shortened labels still differ"


def test_the_report_page_by_task_draws_every_chart_with_100_character_labels(store: str, tmp_path: Path) -> None:
    page = tmp_path / "by-task.html"
    assert main(["report", "--db", store, "--by", "task", "--format", "html", "-o", str(page)]) == 0
    probe = _opened(page)
    metric_charts = [c for c in probe["canvases"] if c["id"].startswith("chart-") and c["id"] != "chart-case-rates"]
    assert len(metric_charts) >= 5
    for canvas in metric_charts:
        assert len(canvas["labels"]) == len(TASKS) and all(len(line) <= 16 for lab in canvas["labels"] for line in lab)


def test_a_bidirectional_control_in_a_label_reaches_neither_the_page_nor_the_terminal(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = []
    for name, extra in (("compare", ["--compare", "v1", "v2"]), ("task", ["--by", "task"])):
        page = tmp_path / f"{name}.html"
        assert main(["report", "--db", store, *extra, "--format", "html", "-o", str(page)]) == 0
        pages.append(page)
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert not set(html) & set(BIDI), f"{page.name}: a bidi control in the page's source"
        assert "\\u202e" in html, "shown as the text it is"
        probe = render(page, probe=_PROBE).probe
        assert not set(probe["text"]) & set(BIDI) and "\\u202eevil" in probe["text"]
        assert not set(str(probe["charts"])) & set(BIDI), "a bidi control in a chart's labels or tooltips"

    for argv in (["--compare", "v1", "v2"], ["--by", "task"], ["--by", "task", "--format", "csv"]):
        capsys.readouterr()
        assert main(["report", "--db", store, *argv]) == 0
        out = capsys.readouterr().out
        assert not set(out) & set(BIDI), f"report {' '.join(argv)}: a bidi control in the terminal output"
        assert "\\u202e" in out, argv
    console = PipeConsole(file=io.StringIO(), width=200)
    console.print(TASKS["coin"])
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert not set(printed) & set(BIDI) and "\\u2067iso\\u2069" in printed


def test_a_long_label_is_shortened_to_two_lines_keeping_its_head_and_tail() -> None:
    assert chart_label("v1.2") == "v1.2"
    label = chart_label(TASKS["broken"])
    assert isinstance(label, list) and len(label) == 2 and all(len(line) <= 16 for line in label)
    assert label[0].startswith("Refund:") and "".join(label).endswith("fast.") and "…" in "".join(label)
    unbroken = chart_label("x" * 100)
    assert isinstance(unbroken, list) and len(unbroken) == 2 and max(map(len, unbroken)) == 16
