"""pytest's one-line summary of a replay failure, at 80 columns: ``FAILED … - TapeDrift: <step>…``.

A real openai-SDK agent, recorded under the plugin against the fake provider, then replayed with a
changed prompt in a pytest subprocess whose terminal is 80 columns wide.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.model_server import FakeProvider, fake_provider

pytest_plugins = ["pytester"]

AGENT = """
import os
import openai
from otel_agent_replay import agent_run

PROMPT = "You are terse."

def test_weather(agent_tape):
    client = openai.OpenAI(base_url=os.environ["WEATHER_MODEL_URL"], api_key="sk-test", max_retries=0)
    with agent_run("weather"):
        said = client.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "system", "content": PROMPT}, {"role": "user", "content": "Weather in Paris?"}],
        )
    assert said.choices[0].message.content
"""


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with fake_provider() as fp:
        yield fp


def test_the_failed_line_at_80_columns_names_the_class_and_the_step(
    pytester: pytest.Pytester, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_MODEL_URL", provider.openai_url)
    monkeypatch.setenv("COLUMNS", "80")
    for ci in ("CI", "BUILD_NUMBER"):  # pytest does not shorten the line on CI: be a terminal here
        monkeypatch.delenv(ci, raising=False)
    pytester.makepyfile(test_weather=AGENT)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    asked = len(provider.requests)
    pytester.makepyfile(test_weather=AGENT.replace("You are terse.", "You are verbose."))
    result = pytester.runpytest_subprocess("-rf")
    result.assert_outcomes(failed=1)
    assert len(provider.requests) == asked  # the strict replay sent nothing
    (line,) = [s for s in result.stdout.lines if s.startswith("FAILED ")]
    assert len(line) <= 80, line
    assert line.startswith("FAILED test_weather.py::test_weather - TapeDrift: openai.chat.completions#1"), line
    assert "_errors" not in line and "otel_agent_replay.core" not in result.stdout.str()
    report = result.stdout.str()
    assert "You are terse." in report and "You are verbose." in report  # the long report still says what differs
