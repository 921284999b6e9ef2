"""What faithful replay costs: capturing a result (its types included) at record, rebuilding it at replay.

A script, not a test: ``.venv/bin/python bench/bench_faithful.py`` (about 20 s). Each row is the
fastest of 9 repetitions (the fastest is the least disturbed by other load on a shared machine),
in µs per operation:

1. ``capture_result`` at record time (its JSON, the redaction check, and the type walk that
   writes ``agent_replay.result_type``, or the plain-JSON walk that finds none is needed) for the
   results of ``bench_record.py`` (document, 20 records) and for typed results;
2. ``recorded_result`` at replay: parse the recorded JSON and rebuild it, with the tool's return
   annotation, for the same results, and for a pydantic model (an OpenAI ``ChatCompletion``);
3. a replay hit end to end (``spans=False``) for each, the number the replay benchmark tracks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bench_record import DOCUMENT, RECORDS
from openai.types.chat import ChatCompletion

from otel_agent_replay import agent_run, load_tape, record, replay, tool
from otel_agent_replay.capture import DEFAULT_CAPTURE, capture_result
from otel_agent_replay.replayer._index import recorded_result

REPS = 9


@dataclasses.dataclass
class Row:
    id: uuid.UUID
    when: dt.datetime
    price: Decimal
    tags: tuple[str, ...]


TYPED = [
    Row(uuid.UUID(int=n), dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), Decimal("9.99"), ("a", "b"))
    for n in range(20)
]
COMPLETION = ChatCompletion.model_validate(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1735689600,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "word " * 200, "refusal": None},
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 200, "total_tokens": 1100},
    }
)

CASES: dict[str, tuple[Any, Any]] = {
    "document (3.9 KB JSON)": (DOCUMENT, dict[str, Any]),
    "20 records (4.0 KB JSON)": (RECORDS, list[dict[str, Any]]),
    "20 dataclasses (uuid, datetime, Decimal, tuple)": (TYPED, list[Row]),
    "OpenAI ChatCompletion (pydantic, 1.3 KB)": (COMPLETION, ChatCompletion),
}


def _returning(value: Any, annotation: Any) -> Callable[..., Any]:
    """A tool body ``(query) -> value`` annotated with ``annotation`` (the value is not an argument)."""

    def produce(query: str) -> Any:
        return value

    produce.__annotations__["return"] = annotation
    return produce


def best(op: Callable[[], object], n: int) -> float:
    """µs per call: the fastest of REPS repetitions of ``n`` calls."""
    times = []
    for _ in range(REPS):
        start = time.perf_counter_ns()
        for _ in range(n):
            op()
        times.append((time.perf_counter_ns() - start) / n / 1000)
    return min(times)


def main() -> int:
    print(f"faithful replay benchmark, fastest of {REPS} reps, µs per operation; load {os.getloadavg()[0]:.2f}")
    print(f"{'result':50} {'capture':>10} {'rebuild':>10} {'of which parse':>15} {'hit, no spans':>14}")
    with tempfile.TemporaryDirectory() as folder:
        for label, (value, annotation) in CASES.items():
            path = os.path.join(folder, f"{abs(hash(label))}.jsonl")

            fn = tool(name="search", side_effect="read_only")(_returning(value, annotation))
            n = 400
            with record(path), agent_run("a"):
                for _ in range(n * REPS + 50):
                    fn("q")
            step = load_tape(path).runs[0].steps[0]
            capture_us = best(lambda _v=value: capture_result(_v, DEFAULT_CAPTURE), 2000)
            rebuild_us = best(lambda _s=step, _a=annotation: recorded_result(_s, None, _a), 2000)
            parse_us = best(lambda _s=step: _s.result, 2000)
            rebuilt = recorded_result(step, None, annotation)
            assert rebuilt == value and type(rebuilt) is type(value), label

            with replay(path, spans=False, allow_unused=True), agent_run("a"):
                fn("q")  # warm
                hit_us = best(lambda _f=fn: _f("q"), n)
            print(f"{label:50} {capture_us:10.2f} {rebuild_us:10.2f} {parse_us:15.2f} {hit_us:14.2f}")
    print(f"load at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
