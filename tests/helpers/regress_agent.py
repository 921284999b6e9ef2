"""A small shop assistant in two versions: the agent of the regression tests (``otel-agent-replay regress``).

``v1`` plans (a model call), looks the order up, checks the stock, sends a confirmation and
answers ``{"answer": ..., "confirmation": ...}``; an unknown order (``bad-…``) is answered
without a confirmation. ``v2`` is worse in two known ways: it asks for the weather (a needless
tool call the recordings do not have: out of bounds) and it drops the confirmation.

The functions are importable as ``helpers.regress_agent:assistant_v2`` (the command line's
``--agent module:function``), and so are the evaluators.
"""

from __future__ import annotations

from typing import Any

from otel_agent_replay import agent_run, model_call, record, tool
from otel_agent_replay.comparison import RunView
from otel_agent_replay.regression import required_keys
from otel_agent_replay.store import Evaluation, Store

AGENT = "shop-assistant"
CASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("o-1", "sku-1", ("orders",)),
    ("o-2", "sku-2", ("orders",)),
    ("o-3", "sku-3", ("orders", "vip")),
    ("o-4", "sku-4", ("orders",)),
    ("bad-5", "sku-5", ("orders", "edge")),
    ("o-6", "sku-6", ("orders", "vip")),
)
"""(order id, sku, tags) of the six recorded cases."""
RAN: list[str] = []
"""Tools that really ran (a replay must add nothing here)."""


class UnknownOrder(LookupError):
    pass


@tool(side_effect="read_only")
def find_order(order_id: str) -> dict[str, Any]:
    RAN.append(f"find_order:{order_id}")
    if order_id.startswith("bad"):
        raise UnknownOrder(f"no order {order_id}")
    return {"order_id": order_id, "city": "Lyon", "total": 30 + len(order_id)}


@tool(side_effect="read_only")
def check_stock(sku: str) -> int:
    RAN.append(f"check_stock:{sku}")
    return 3


@tool(side_effect="read_only")
def lookup_weather(city: str) -> str:
    RAN.append(f"lookup_weather:{city}")
    return "sunny"


@tool(side_effect="external")
def send_confirmation(order_id: str) -> dict[str, Any]:
    RAN.append(f"send_confirmation:{order_id}")
    return {"confirmation_id": f"c-{order_id}"}


@model_call(provider="stand-in", model="tiny-planner")
def plan(question: str) -> dict[str, Any]:
    RAN.append("plan")
    return {"plan": ["find_order", "check_stock"], "usage": {"input_tokens": 12, "output_tokens": 4}}


def _answer(order_id: str, sku: str, *, version: str) -> dict[str, Any]:
    plan(f"where is order {order_id}?")
    try:
        order = find_order(order_id)
    except UnknownOrder:
        return {"answer": f"I cannot find order {order_id}."}
    stock = check_stock(sku)
    answer: dict[str, Any] = {"answer": f"Order {order_id} ships; {stock} left of {sku}."}
    if version == "v2":
        answer["weather"] = lookup_weather(order["city"])  # needless
        return answer  # and the confirmation is gone
    answer["confirmation"] = send_confirmation(order_id)["confirmation_id"]
    return answer


@agent_run(AGENT, agent_version="v1")
def assistant_v1(order_id: str, sku: str) -> dict[str, Any]:
    return _answer(order_id, sku, version="v1")


@agent_run(AGENT, agent_version="v2")
def assistant_v2(order_id: str, sku: str) -> dict[str, Any]:
    return _answer(order_id, sku, version="v2")


def record_v1(tape: Any, store: Store) -> list[str]:
    """Record v1 on the six cases into ``tape`` and the store (live, ``record(store=)``), tagged; the run ids."""
    ids = []
    with record(tape, store=store):
        for order_id, sku, _ in CASES:
            assistant_v1(order_id, sku)
    runs = {s.input: s.session_id for s in store.sessions(agent_name=AGENT)}
    for order_id, _sku, tags in CASES:
        session_id = next(sid for text, sid in runs.items() if text and f'"{order_id}"' in text)
        store.tag(session_id, *tags)
        ids.append(session_id)
    return ids


OUTPUT_SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string"}, "confirmation": {"type": "string"}},
}

confirmed = required_keys("answer", "confirmation", metric="confirmed")
"""An evaluator for ``--evaluator helpers.regress_agent:confirmed``."""


def polite(view: RunView) -> Evaluation:
    """A stand-in LLM judge: names its model, and says whether the answer is a full sentence."""
    output = view.final_output if isinstance(view.final_output, dict) else {}
    text = str(output.get("answer", ""))
    return Evaluation("polite", score=1.0 if text.endswith(".") else 0.0, passed=text.endswith("."), explanation=text)


polite.judge_model = "judge-stand-in-1"  # type: ignore[attr-defined]


def stricter(view: RunView) -> list[Evaluation]:
    """Criteria ``c2``: the answer must also mention the order id."""
    output = view.final_output if isinstance(view.final_output, dict) else {}
    text = str(output.get("answer", ""))
    return [Evaluation("mentions_order", passed="order" in text.lower(), score=1.0 if "order" in text.lower() else 0.0)]
