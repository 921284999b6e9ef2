"""What reading a model step as messages costs: the ``gen_ai.input.messages`` / ``gen_ai.output.messages``
written for every recorded model step, and ``compare``'s view of a model step (volatile fields left
out, a stream assembled). Run: ``python bench/bench_messages.py`` (``--quick`` for fewer rounds)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from otel_agent_replay.comparison._model import answer_view
from otel_agent_replay.conversation import answer_of, dumps, prompt_of


def _per_call(fn: Callable[[], Any], number: int, repeat: int = 5) -> float:
    """Median µs per call over ``repeat`` rounds of ``number`` calls."""
    rounds = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - started) / number * 1e6)
    return statistics.median(rounds)


def main() -> None:
    quick = "--quick" in sys.argv
    scale = 10 if quick else 1
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "refund policy"}'}}
    turn = [
        {"role": "user", "content": "hello " * 50},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x" * 200},
    ]
    request = {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, *turn * 7]}
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    events = [
        {
            "offset": 0.01,
            "text": "data: " + json.dumps({**chunk, "choices": [{"index": 0, "delta": {"content": "w "}}]}) + "\n\n",
        }
        for _ in range(200)
    ]
    stream = {"status": 200, "headers": {"content-type": "text/event-stream"}, "events": events}
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
        ],
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    answer = {"status": 200, "headers": {"content-type": "application/json", "request-id": "r"}, "body": body}
    rows = [
        (
            "22-message chat request → gen_ai.input.messages",
            lambda: dumps(list(prompt_of("openai.chat", request).messages)),
            2000,
        ),  # type: ignore[union-attr]
        (
            "Anthropic JSON answer → gen_ai.output.messages",
            lambda: dumps(answer_of("anthropic.messages", answer)),
            20000,
        ),
        (
            "200-event SSE stream → gen_ai.output.messages",
            lambda: dumps(answer_of("openai.chat.completions", stream)),
            200,
        ),
        ("compare's view of the Anthropic answer", lambda: answer_view("anthropic.messages", answer), 20000),
        ("compare's view of the 200-event stream", lambda: answer_view("openai.chat.completions", stream), 200),
    ]
    for name, fn, number in rows:
        print(f"{name:55} {_per_call(fn, max(1, number // scale)):9.1f} µs")


if __name__ == "__main__":
    main()
