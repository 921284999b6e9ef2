"""What a failing replayed test says, and what a test may expect: run with pytester in real subprocesses.

A drift is the headline whatever wrapped it (the anthropic SDK's connection error, anyio's exception
groups); ``expect=`` passes a test that expects a refusal; a test with no ``agent_run`` records and replays."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.model_server import FakeProvider, fake_provider

pytest_plugins = ["pytester"]


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with fake_provider() as fp:
        monkeypatch.setenv("FAKE_PROVIDER_URL", fp.url)  # the pytester subprocesses inherit it
        monkeypatch.setenv("COLUMNS", "400")  # the short summary's FAILED line is not cut
        yield fp


NO_RUN = """
import os
import openai
from otel_agent_replay import tool

@tool(side_effect="read_only")
def weather(city: str) -> str:
    return f"sunny in {city}"

PROMPT = "What is the weather in Paris?"

def test_no_agent_run_at_all(agent_tape):
    client = openai.OpenAI(base_url=os.environ["FAKE_PROVIDER_URL"] + "/v1", api_key="sk-test", max_retries=0)
    reply = client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": PROMPT}])
    assert reply.choices[0].message.content
    assert weather("Paris") == "sunny in Paris"
    assert agent_tape.view().step_count == 2 and agent_tape.view().tokens_in > 0
"""

ANTHROPIC = """
import os
import anthropic

PROMPT = "Say hello"

def test_anthropic(agent_tape):
    client = anthropic.Anthropic(base_url=os.environ["FAKE_PROVIDER_URL"], api_key="sk-ant-test", max_retries=2)
    client.messages.create(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": PROMPT}])
"""

ANYIO = """
import os
import anyio
import openai

PROMPT = "Say hello"

async def ask():
    client = openai.AsyncOpenAI(base_url=os.environ["FAKE_PROVIDER_URL"] + "/v1", api_key="sk-test", max_retries=0)
    await client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": PROMPT}])

async def main():
    async with anyio.create_task_group() as outer:
        async def inner():
            async with anyio.create_task_group() as group:
                group.start_soon(ask)
        outer.start_soon(inner)

def test_anyio(agent_tape):
    anyio.run(main)
"""

REFUSAL = """
import pytest
from otel_agent_replay import SideEffectRefused, tool

@tool(side_effect="write")
def send(to: str) -> str:
    return f"sent to {to}"

@pytest.mark.agent_tape(EXPECT)
def test_refusal(agent_tape):
    BODY
"""
LIVE_BODY = 'assert send("ada") == "sent to ada"'
EXPECTING_BODY = 'with pytest.raises(SideEffectRefused):\n        send("ada")'


def test_a_test_with_no_agent_run_records_once_and_replays_offline(
    pytester: pytest.Pytester, provider: FakeProvider
) -> None:
    pytester.makepyfile(test_agent=NO_RUN)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    assert (pytester.path / "tapes" / "test_agent" / "test_no_agent_run_at_all.jsonl").exists()
    sent = len(provider.requests)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    assert len(provider.requests) == sent == 1  # the replay sent nothing


@pytest.mark.parametrize("module", [NO_RUN, ANTHROPIC, ANYIO], ids=["openai", "anthropic", "anyio-task-groups"])
def test_a_drift_is_the_headline_whatever_wrapped_it(
    pytester: pytest.Pytester, provider: FakeProvider, module: str
) -> None:
    pytester.makepyfile(test_agent=module)
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)
    pytester.makepyfile(test_agent=module.replace('PROMPT = "', 'PROMPT = "Now: '))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    failed = [line for line in result.stdout.lines if line.startswith("FAILED ")]
    assert len(failed) == 1 and "TapeDrift" in failed[0]
    lines = result.stdout.lines
    start = next(n for n, line in enumerate(lines) if line.startswith("_") and "test_" in line)
    section = "\n".join(lines[start : start + 20])
    assert section.count("TapeDrift") >= 1 and "content" in section and "Now: " in section


@pytest.mark.parametrize(("expect", "outcome"), [("expect=SideEffectRefused", "passed"), ("", "failed")])
def test_expect_passes_a_test_that_expects_a_refusal(pytester: pytest.Pytester, expect: str, outcome: str) -> None:
    pytester.makepyfile(test_agent=REFUSAL.replace("EXPECT", "").replace("BODY", LIVE_BODY))
    pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=1)  # recording: it runs
    pytester.makepyfile(test_agent=REFUSAL.replace("EXPECT", expect).replace("BODY", EXPECTING_BODY))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(["*SideEffectRefused*send*"])
