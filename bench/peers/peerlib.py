"""What the per-peer runners share: the tool's arguments and result, the timing, the JSON they print.

Each runner (``run_<peer>.py``) runs in its own peer's virtual environment, started by
``bench/bench_peers.py`` as a child process; only the standard library, the OpenTelemetry SDK and
``benchlib`` (from ``bench/``, which needs nothing else) are imported here. A runner builds its
traced ``search`` tool and hands it to ``run``; ``run`` measures, in that one process:

1. the bare span (``start_as_current_span("x")``, no attributes) on a provider of its own whose only
   processor is a ``BatchSpanProcessor`` to a discarding exporter, before and after;
2. one traced call ``search(customer_id="c_17", limit=20)`` returning the same ~4 KB result;

and prints one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import benchlib
from benchlib import DiscardExporter, Sample, time_loop
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

CUSTOMER_ID = "c_17"
LIMIT = 20

_WORDS = [
    "order",
    "shipped",
    "parcel",
    "warehouse",
    "invoice",
    "refund",
    "customer",
    "delivery",
    "address",
    "return",
    "window",
    "policy",
    "item",
    "quantity",
    "price",
    "discount",
    "coupon",
    "tracking",
    "carrier",
    "label",
    "weekend",
    "morning",
    "agent",
    "review",
    "rating",
    "reply",
    "support",
    "ticket",
    "status",
    "update",
    "pending",
    "delivered",
]


def _note(n_chars: int, seed: int) -> str:
    words: list[str] = []
    size, i = 0, seed
    while size < n_chars:
        word = _WORDS[(i * 7 + 3) % len(_WORDS)]
        words.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(words)[:n_chars]


def make_result(count: int = 20, target_bytes: int = 4_096) -> dict[str, Any]:
    """A customer's ~20 orders, about ``target_bytes`` of JSON: the same value in every process."""

    def build(note_chars: int) -> dict[str, Any]:
        orders = [
            {
                "order_id": f"ord_{10_000 + i}",
                "amount": round(19.95 + 7.5 * i, 2),
                "currency": "EUR",
                "status": ("refunded", "shipped", "delivered", "pending")[i % 4],
                "created": f"2026-11-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
                "items": 1 + i % 3,
                "note": _note(note_chars, seed=i),
            }
            for i in range(count)
        ]
        return {"customer_id": CUSTOMER_ID, "orders": orders}

    bare = len(json.dumps(build(0), separators=(",", ":")))
    return build(max(0, (target_bytes - bare) // count))


RESULT = make_result()
RESULT_JSON_BYTES = len(json.dumps(RESULT, separators=(",", ":")))


@dataclass(frozen=True)
class Plan:
    reps: int = 7
    bare_reps: int = 15
    bare_n: int = 10_000
    call_n: int = 4_000
    warmup_n: int = 500

    @classmethod
    def from_argv(cls, argv: list[str]) -> Plan:
        return cls(reps=5, bare_reps=9, bare_n=4_000, call_n=1_500, warmup_n=200) if "--quick" in argv else cls()


@dataclass
class Outcome:
    """What a runner reports beside the timings: spans exported (or lines written), notes."""

    spans_made: int = 0
    spans_exported: int | None = None
    notes: list[str] = field(default_factory=list)


def bare_sample(plan: Plan) -> Sample:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter()))
    start = provider.get_tracer("bench.bare").start_as_current_span

    def loop(n: int) -> None:
        for _ in range(n):
            with start("x"):
                pass

    try:
        return time_loop(loop, plan.bare_n, plan.bare_reps, plan.warmup_n * 4)
    finally:
        provider.shutdown()


def call_sample(plan: Plan, search: Callable[..., object]) -> Sample:
    assert search(customer_id=CUSTOMER_ID, limit=LIMIT) == RESULT

    def loop(n: int) -> None:
        for _ in range(n):
            search(customer_id=CUSTOMER_ID, limit=LIMIT)

    return time_loop(loop, plan.call_n, plan.reps, plan.warmup_n)


def calls_made(plan: Plan) -> int:
    """How many times ``call_sample`` calls the tool (the check call, the warm-up, the repetitions)."""
    return 1 + plan.warmup_n + plan.reps * plan.call_n


def versions(*names: str) -> dict[str, str]:
    return {name: metadata.version(name) for name in ("opentelemetry-sdk", *names)}


def emit(
    peer: str,
    decorator: str,
    processor: str,
    packages: dict[str, str],
    before: Sample,
    call: Sample,
    after: Sample,
    outcome: Outcome,
) -> None:
    """Print the runner's one JSON object (the parent reads the last line of stdout)."""
    bare_ns = (before.median_ns + after.median_ns) / 2
    out = {
        "peer": peer,
        "decorator": decorator,
        "processor": processor,
        "packages": packages,
        "python": sys.version.split()[0],
        "result_json_bytes": RESULT_JSON_BYTES,
        "bare_before": before.to_json(),
        "bare_after": after.to_json(),
        "bare_us": round(bare_ns / benchlib.NS_PER_US, 3),
        "bare_drift_percent": round((after.median_ns - before.median_ns) / before.median_ns * 100, 2),
        "call": call.to_json(),
        "call_spread_us": call.spread,
        "ratio": round(call.median_ns / bare_ns, 3),
        "spans_made": outcome.spans_made,
        "spans_exported": outcome.spans_exported,
        "notes": outcome.notes,
    }
    print(json.dumps(out), flush=True)
