"""A small support agent recorded with the public API: the sessions of the evidence-store tests.

Version ``1.0`` looks the account up and answers. Version ``1.1`` is worse in known ways: the
look-up times out once and is called again with the same arguments (a retry), it asks for a
refund tool that answers ``{"error": "unexpected_tool_call"}`` (the out-of-bounds answer), and its
model calls use more tokens. Each model call sends the conversation so far, so its messages
repeat the history, as chat APIs do.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from otel_agent_replay import agent_run, model_call, record, tool
from otel_agent_replay.store import OUT_OF_BOUNDS

AGENT = "support-bot"
TOKENS = {"1.0": ((30, 10), (50, 20)), "1.1": ((60, 25), (70, 30))}
_fail_once: set[str] = set()


class BillingError(Exception):
    """The billing back end refused a customer."""


@tool(side_effect="read_only", version="2")
def fetch_account(customer_id: str) -> dict[str, Any]:
    """The customer's account; times out once for a customer in ``_fail_once``."""
    if customer_id in _fail_once:
        _fail_once.discard(customer_id)
        raise TimeoutError(f"billing API timed out for {customer_id}")
    if customer_id.startswith("bad"):
        raise BillingError(f"no account {customer_id}")
    return {"customer_id": customer_id, "plan": "pro", "due": 42}


@tool(side_effect="write")
def issue_refund(customer_id: str) -> dict[str, Any]:
    """Stands in for what an out-of-bounds replay answers when the agent calls an unrecorded tool."""
    return {"error": OUT_OF_BOUNDS, "tool": "issue_refund"}


@model_call(provider="stand-in", model="tiny-chat")
def chat(messages: list[dict[str, Any]], version: str) -> dict[str, Any]:
    """A stand-in model: asks for the account first, then answers."""
    turn = 0 if len(messages) <= 2 else 1
    tokens_in, tokens_out = TOKENS[version][turn]
    if turn == 0:
        message = {
            "role": "assistant",
            "content": "Let me look at the account.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "fetch_account"}}],
        }
    else:
        message = {"role": "assistant", "content": f"You owe {messages[-1]['content']}."}
    return {"choices": [{"message": message}], "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}}


def support_agent(customer_id: str, version: str) -> str:
    """One conversation; raises ``BillingError`` for a customer whose id starts with ``bad``."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer billing questions."},
        {"role": "user", "content": f"What does {customer_id} owe?"},
    ]
    first = chat(messages, version)["choices"][0]["message"]
    if version == "1.1":
        issue_refund(customer_id)
        _fail_once.add(customer_id)
        with contextlib.suppress(TimeoutError):
            fetch_account(customer_id)
        _fail_once.discard(customer_id)  # a replay serves the timeout from the tape: the tool never ran
    account = fetch_account(customer_id)
    messages += [
        {"role": "assistant", "content": first["content"]},
        {"role": "tool", "content": str(account["due"])},
    ]
    answer: str = chat(messages, version)["choices"][0]["message"]["content"]
    return answer


def run_support(customer_id: str, version: str) -> str:
    """``support_agent`` inside its run (the run fails when the agent raises)."""
    with agent_run(AGENT, agent_version=version, task="billing question", input={"customer_id": customer_id}) as run:
        answer = support_agent(customer_id, version)
        run.set_output({"answer": answer})
    return answer


def record_support(tape: Path, version: str, customers: list[str]) -> Path:
    """Record one session per customer to ``tape``; failing sessions are recorded as failed runs."""
    with record(tape):
        for customer in customers:
            with contextlib.suppress(BillingError):
                run_support(customer, version)
    return tape
