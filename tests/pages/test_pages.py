"""``report --format html`` and ``diff --html`` write one self-contained page each, opened here in a
real headless chromium: the page renders (its charts drawn by the embedded Chart.js), holds the
versions and the differences, looks like something (a screenshot with many colours), and attempts no
request at all. The diff of an edited fork leads with its lineage and its one cause, the
consequences folded under it, and marks cause, consequence and answered steps apart."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import weather_fork
from helpers.headless import Rendered, png_colours, render
from helpers.minting_server import minting_provider
from helpers.model_server import FakeProvider
from helpers.store_agents import record_support
from helpers.weather_agents import record_weather

from otel_agent_replay import load_tape
from otel_agent_replay.cli import main
from otel_agent_replay.pages import CSP


def _self_contained(html: str) -> None:
    """No reference to anything outside the page: no src/href attribute, no url(), CSP forbids requests."""
    assert CSP in html
    assert not re.search(r"\b(src|href)\s*=", html, re.I)
    assert "url(" not in html.split("<script>", 1)[0]


def _opened(page: Path) -> Rendered:
    rendered = render(page)
    assert rendered.requests == (), f"the page made requests: {rendered.requests!r}"
    assert rendered.refused == (), f"the page tried requests its policy refused: {rendered.refused!r}"
    colours = png_colours(rendered.png)
    assert len(colours) >= 8, f"the screenshot is blank or nearly ({len(colours)} colours)"
    return rendered


def test_the_html_report_of_a_two_version_store_renders_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    customers = ["c1", "c2", "bad3"]
    tapes = [
        record_support(tmp_path / "v10.jsonl", "1.0", customers),
        record_support(tmp_path / "v11.jsonl", "1.1", customers),
    ]
    db = str(tmp_path / "store.db")
    assert main(["ingest", *map(str, tapes), "--db", db]) == 0
    page = tmp_path / "report.html"
    assert main(["report", "--db", db, "--compare", "1.0", "1.1", "--format", "html", "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    _self_contained(html)
    rendered = _opened(page)
    dom = rendered.dom
    assert 'data-version="1.0"' in dom and 'data-version="1.1"' in dom
    drawn = int(re.search(r'data-charts-drawn="(\d+)"', dom).group(1))  # type: ignore[union-attr]
    assert drawn >= 5 and dom.count('data-drawn="yes"') == drawn
    assert "1.1 against 1.0: worse: tool_success_rate" in dom, "the heading is the headline: it names what changed"


def test_the_html_diff_marks_the_differing_steps_and_renders_offline(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with minting_provider() as provider:
        record_weather(provider, "anthropic", True, "Paris", a)
        record_weather(provider, "anthropic", True, "Oslo", b)
    page = tmp_path / "diff.html"
    assert main(["diff", str(a), str(b), "--html", str(page)]) == 1
    _self_contained(page.read_text(encoding="utf-8"))
    dom = _opened(page).dom
    assert 'data-charts-drawn="1"' in dom
    differing = re.findall(r'<tr class="(?:cause|consequence)" data-step="([^"]+)"', dom)
    assert differing, "no step marked as differing"
    assert any(step.startswith("get_weather") for step in differing)
    assert "args.city" in dom and "Oslo" in dom and "Paris" in dom


@pytest.fixture
def weather(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with weather_fork.weather_world(tmp_path, monkeypatch) as fp:
        yield fp


def test_the_html_diff_of_a_fork_leads_with_its_lineage_and_its_cause(tmp_path: Path, weather: FakeProvider) -> None:
    tape = weather_fork.record_weather(tmp_path / "weather.jsonl", weather)
    (recorded,) = load_tape(tape).runs
    fork_tape = weather_fork.fork_weather(tape, weather, {"get_weather#1": weather_fork.RAINY})
    page = tmp_path / "diff.html"
    assert main(["diff", str(tape), str(fork_tape), "--html", str(page)]) == 1
    _self_contained(page.read_text(encoding="utf-8"))
    dom = _opened(page).dom

    edit = 'edit get_weather#1 = {"city":"Paris","sky":"rainy","temp_c":18}'
    lineage = re.search(r'<section id="lineage">(.*?)</section>', dom, re.S)
    assert lineage is not None, "no lineage on the page"
    assert "right run" in lineage.group(1) and "is a fork of the left run" in lineage.group(1)
    assert f"({tape}) at step get_weather#1, {edit}" in lineage.group(1)
    (forked,) = load_tape(fork_tape).runs
    run_header = dom[dom.index("<h2>run 1: weather</h2>") : dom.index('<table class="runs"')]
    run_lineage = f"right run {forked.run_id}: fork of {tape}, run {recorded.run_id}, at step get_weather#1, {edit}"
    assert run_lineage in run_header  # the run's own header says so too

    causes = re.findall(r'<li class="cause[^"]*" data-origin="([^"]+)" data-step="([^"]+)"', dom)
    assert causes == [("edit", "get_weather#1")]
    cause_at, folded_at = dom.index('<li class="cause first"'), dom.index('<details class="consequences">')
    assert dom.index('<section id="lineage">') < cause_at < folded_at < dom.index('<table class="runs"')
    assert dom.index('<details id="all-differences">') > folded_at  # the flat list comes after, folded
    assert "result.sky" in dom[cause_at:folded_at] and "rainy" in dom[cause_at:folded_at]
    folded = re.search(
        r'<details class="consequences"><summary>(\d+) consequence\(s\)[^<]*</summary>(.*?)</details>', dom, re.S
    )
    assert folded is not None
    count, items = int(folded.group(1)), re.findall(r'<li class="consequence" data-carried="(\w+)"', folded.group(2))
    assert count == len(items) >= 4 and "data" in items and "input" in items

    roles = dict(re.findall(r'<tr class="\w+" data-step="([^"]+)" data-role="(\w+)"', dom))
    assert roles["get_weather#1"] == "cause"
    assert roles["openai.chat.completions#2"] == roles["save_note#1"] == "consequence"
    (child,) = [step for step in roles if step.startswith("get_weather#1/GET")]
    assert roles[child] == "answered"  # the edited tool's own HTTP call: not missing
    assert roles["openai.chat.completions#1"] == "same"
    assert "step_missing" not in dom


def test_the_browser_check_sees_a_page_that_fetches(tmp_path: Path) -> None:
    """The check above can fail: a page that loads an image and calls fetch is caught, request by request."""
    page = tmp_path / "fetching.html"
    page.write_text(
        "<!DOCTYPE html><html><body data-charts-drawn='0'><p>hello</p>"
        "<img src='http://127.0.0.1:9/pixel.png'><script>fetch('http://127.0.0.1:9/data.json').catch(() => 0)</script>"
        "</body></html>",
        encoding="utf-8",
    )
    rendered = render(page)
    assert set(rendered.requests) >= {"http://127.0.0.1:9/pixel.png", "http://127.0.0.1:9/data.json"}
