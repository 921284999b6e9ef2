"""A small shop assistant in two versions, for the evidence store and ``otel-agent-replay regress``.

``python -m examples.shop_assistant evidence.db`` (from the repository's root) records version 1
on six tagged cases, live, straight into the evidence store (``record(..., store=...)``).
Version 2 is what a careless change looks like: it asks for the weather (a tool call no
recording has: out of bounds) and no longer sends the order confirmation.
``otel-agent-replay regress`` runs it offline against version 1's golden set; ``confirmed`` is an
evaluator for ``--evaluator examples.shop_assistant:confirmed``.
"""

from __future__ import annotations

import sys
from typing import Any

from otel_agent_replay import agent_run, model_call, open_store, record, tool
from otel_agent_replay.regression import required_keys

CASES = {"o-1": "orders", "o-2": "orders", "o-3": "vip", "o-4": "orders", "bad-5": "edge", "o-6": "vip"}


class UnknownOrder(LookupError):
    pass


@tool(side_effect="read_only")
def find_order(order_id: str) -> dict[str, Any]:
    if order_id.startswith("bad"):
        raise UnknownOrder(f"no order {order_id}")
    return {"order_id": order_id, "city": "Lyon"}


@tool(side_effect="read_only")
def lookup_weather(city: str) -> str:
    return "sunny"


@tool(side_effect="external")  # sends mail: never runs in a replay; regress serves its recorded result
def send_confirmation(order_id: str) -> dict[str, Any]:
    return {"confirmation_id": f"c-{order_id}"}


@model_call(provider="stand-in", model="tiny-planner")
def plan(question: str) -> dict[str, Any]:
    return {"plan": ["find_order", "send_confirmation"], "usage": {"input_tokens": 12, "output_tokens": 4}}


def _answer(order_id: str, version: str) -> dict[str, Any]:
    plan(f"where is order {order_id}?")
    try:
        order = find_order(order_id)
    except UnknownOrder:
        return {"answer": f"I cannot find order {order_id}."}
    answer: dict[str, Any] = {"answer": f"Order {order_id} has shipped."}
    if version == "2":
        answer["weather"] = lookup_weather(order["city"])
        return answer
    answer["confirmation"] = send_confirmation(order_id)["confirmation_id"]
    return answer


@agent_run("shop-assistant", agent_version="1")
def assistant_v1(order_id: str) -> dict[str, Any]:
    return _answer(order_id, "1")


@agent_run("shop-assistant", agent_version="2")
def assistant_v2(order_id: str) -> dict[str, Any]:
    return _answer(order_id, "2")


confirmed = required_keys("answer", "confirmation", metric="confirmed")


def main(db: str) -> None:
    with open_store(db) as store:
        with record("shop-v1.jsonl", store=store):
            for order_id in CASES:
                assistant_v1(order_id)
        for session in store.sessions(agent_name="shop-assistant", agent_version="1"):
            order_id = next(o for o in CASES if f'"{o}"' in (session.input or ""))
            store.tag(session.session_id, "shop", CASES[order_id])
    print(f"recorded version 1 on {len(CASES)} cases into shop-v1.jsonl and {db}")


if __name__ == "__main__":
    # Record through the module imported under its own name, not as __main__: a recorded exception
    # names its class (examples.shop_assistant.UnknownOrder), and the replay rebuilds it from that name.
    from examples import shop_assistant

    shop_assistant.main(sys.argv[1] if len(sys.argv) > 1 else "evidence.db")
