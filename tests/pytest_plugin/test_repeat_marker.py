"""The nightly tier: ``@pytest.mark.agent_tape(repeat=5, min_pass_rate=0.8)`` runs a test's body five
times against the live (fake) model with the tools replayed, and passes or fails on the pass rate."""

from __future__ import annotations

import random

import pytest
from helpers.model_server import fake_provider
from helpers.quiz_agent import URL_ENV

pytest_plugins = ["pytester"]

NIGHTLY = """
import os

import openai
import random

import pytest

from otel_agent_replay import agent_run, tool

@tool(side_effect="read_only")
def question_of(case: str) -> str:
    return f"What is the answer to case {case}?"

def ask(case):
    with agent_run("nightly"):
        question = question_of(case)
        client = openai.OpenAI(base_url=os.environ["AGENT_REPLAY_QUIZ_URL"] + "/v1", api_key="sk-test-quiz",
                               max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"quiz case={case} version=nightly: {question}"}]
        )
        return reply.choices[0].message.content

@pytest.mark.agent_tape(repeat=5, min_pass_rate=0.8)
def test_steady(agent_tape):
    assert ask("steady") == "right"

@pytest.mark.agent_tape(repeat=5, min_pass_rate=0.8)
def test_shaky(agent_tape):
    assert ask("shaky") == "right", "the model was wrong"
"""


def test_repeat_passes_five_of_five_and_fails_two_of_five_naming_the_rate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_nightly=NIGHTLY)
    with fake_provider() as fp:
        monkeypatch.setenv(URL_ENV, fp.url)
        fp.odds.update({("steady", "nightly"): "y", ("shaky", "nightly"): "y"})
        recorded = pytester.runpytest_subprocess("--agent-record-mode=once")
        recorded.assert_outcomes(passed=2)  # recording runs each body once
        assert sum(fp.draws.values()) == 2
        fp.draws.clear()
        fp.odds.update({("steady", "nightly"): "yyyyy", ("shaky", "nightly"): "ynnyn"})
        nightly = pytester.runpytest_subprocess("-rA")
        assert fp.draws == {("steady", "nightly"): 5, ("shaky", "nightly"): 5}, "five live model calls per test"
    nightly.assert_outcomes(passed=1, failed=1)
    text = nightly.stdout.str()
    assert "PASSED test_nightly.py::test_steady" in text
    assert "pass rate 2/5 = 40% < 80% (min_pass_rate); failed repetitions: 2, 3, 5" in text
    assert "repetition 2: AssertionError: the model was wrong" in text


NOTES = """
import json
import os

import openai
import random

import pytest

from otel_agent_replay import agent_run, tool

SAVED = []

@tool(side_effect="read_only")
def weather(city: str) -> str:
    return f"sunny in {city}"

@tool(side_effect="write")
def save_note(case: str, text: str) -> dict:
    SAVED.append(text)
    return {"saved": True}

TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

def ask(case):
    with agent_run("notes"):
        client = openai.OpenAI(base_url=os.environ["AGENT_REPLAY_QUIZ_URL"] + "/v1", api_key="sk-test-notes",
                               max_retries=0)
        messages = [{"role": "user", "content": f"quiz case={case} version=nightly: the weather?"}]
        for _ in range(4):
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                answer = weather(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
        save_note(case, message.content)  # the write tool's argument is what the model said
        return message.content

@pytest.mark.agent_tape(repeat=5, min_pass_rate=0.8)
def test_any_answer(agent_tape):
    assert ask("lenient") in ("right", "wrong")
    assert agent_tape.recording or SAVED == [], "a replay never runs the write tool"

@pytest.mark.agent_tape(repeat=5, min_pass_rate=0.8)
def test_right_answer(agent_tape):
    assert ask("shaky") == "right", "the model was wrong"
"""


def test_repeat_judges_outcomes_a_write_tools_changed_argument_fails_no_repetition(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_notes=NOTES)
    with fake_provider() as fp:
        monkeypatch.setenv(URL_ENV, fp.url)
        fp.odds.update({("lenient", "nightly"): "y", ("shaky", "nightly"): "y"})
        pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=2)
        fp.draws.clear()
        fp.odds.update({("lenient", "nightly"): "ynnyn", ("shaky", "nightly"): "ynnyn"})
        nightly = pytester.runpytest_subprocess("-rA")
    nightly.assert_outcomes(passed=1, failed=1)
    text = nightly.stdout.str()
    assert "PASSED test_notes.py::test_any_answer" in text  # three of its notes drifted: counted, not failed
    failed = next(line for line in text.splitlines() if line.startswith("FAILED test_notes.py::test_right_answer"))
    assert failed.startswith("FAILED test_notes.py::test_right_answer - pass rate 2/5 = 40% < 80%"), "the rate"
    assert "failed repetitions: 2, 3, 5" in text
    assert "TapeDrift" not in text
    assert "repetition 2: AssertionError: the model was wrong" in text


def _seeded(seed: int, case: str, odds: float, k: int) -> list[bool]:
    """The fake provider's draws for ``case`` (its formula: right when the seeded number is below the odds)."""
    return [random.Random(f"{seed}|{case}|nightly|{n}").random() < odds for n in range(k)]


def test_repeat_against_a_model_answering_at_random_states_the_seeded_rate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_notes=NOTES)
    seed = next(s for s in range(100) if 0 < sum(_seeded(s, "shaky", 0.5, 5)) < 4)  # a seed that fails the rate
    right = _seeded(seed, "shaky", 0.5, 5)
    passes = sum(right)
    with fake_provider() as fp:
        monkeypatch.setenv(URL_ENV, fp.url)
        fp.odds.update({("lenient", "nightly"): 1.0, ("shaky", "nightly"): 1.0})
        pytester.runpytest_subprocess("--agent-record-mode=once").assert_outcomes(passed=2)
        fp.draws.clear()
        fp.seed = seed
        fp.odds.update({("lenient", "nightly"): 0.5, ("shaky", "nightly"): 0.5})
        nightly = pytester.runpytest_subprocess("-rA")
        assert fp.draws == {("lenient", "nightly"): 5, ("shaky", "nightly"): 5}
    nightly.assert_outcomes(passed=1, failed=1)
    text = nightly.stdout.str()
    assert "TapeDrift" not in text, "a note with the other answer is counted, not failed"
    failed = next(line for line in text.splitlines() if line.startswith("FAILED test_notes.py::test_right_answer"))
    assert f" - pass rate {passes}/5 = {passes / 5:.0%} < 80%" in failed, "the FAILED line states the rate"
    wrong = ", ".join(str(n + 1) for n, ok in enumerate(right) if not ok)
    assert f"< 80% (min_pass_rate); failed repetitions: {wrong}" in text
    assert f"AssertionError: pass rate {passes}/5" in text, "the failure itself is still an AssertionError"
