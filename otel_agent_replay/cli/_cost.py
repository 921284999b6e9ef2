"""Estimated cost of model steps, from the maintained price data of ``genai-prices`` (an optional
dependency: ``pip install 'otel-agent-replay[cost]'``); never a price table of our own."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import Any

from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Step

_prices: Any = None
"""``genai_prices`` once imported, False when it cannot be (Python 3.10, or the extra is not installed:
no cost column). It is imported for the first model step with tokens: its price data takes longer
to load than the rest of ``show``, and a tape without model steps needs none of it."""


def _genai_prices() -> Any:
    global _prices
    if _prices is None:
        try:
            import genai_prices
        except ImportError:
            _prices = False
        else:
            _prices = genai_prices
    return _prices or None


def cost_available() -> bool:
    """Whether prices can be looked up here."""
    return _genai_prices() is not None


def step_cost(step: Step) -> Decimal | None:
    """The estimated price in USD of one model step by its tokens, model and provider, at the time it
    ran; None when the tokens, the model or its price are unknown."""
    if step.kind != "llm" or (step.input_tokens is None and step.output_tokens is None):
        return None
    model = step.attributes.get(A.GEN_AI_RESPONSE_MODEL) or step.model
    if not isinstance(model, str) or not model:
        return None
    genai_prices = _genai_prices()
    if genai_prices is None:
        return None
    usage = genai_prices.Usage(input_tokens=step.input_tokens or 0, output_tokens=step.output_tokens or 0)
    when = _dt.datetime.fromtimestamp(step.start_ns / 1e9, _dt.timezone.utc) if step.start_ns else None
    for provider in (step.provider, None) if step.provider else (None,):
        try:
            found: Any = genai_prices.calc_price(
                usage, model_ref=model, provider_id=provider, genai_request_timestamp=when
            )
        except LookupError:
            continue
        return Decimal(str(found.total_price))
    return None


def run_cost(steps: tuple[Step, ...]) -> Decimal | None:
    """The sum of the model steps' estimated prices (None when none is known)."""
    costs = [c for c in (step_cost(s) for s in steps) if c is not None]
    return sum(costs, Decimal(0)) if costs else None


def money(value: Decimal) -> str:
    """``$0.0075``: four significant decimals for small sums."""
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"
