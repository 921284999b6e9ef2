"""Cost of a replayed model call over HTTP, against the openai SDK's own parsing of the same response.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/bench_http.py           # about 20 seconds
    .venv/bin/python bench/bench_http.py --calls 100

Two cases, each a ``chat.completions.create`` through the real openai SDK (``max_retries=0``):

- whole: a ~4 KB chat completion (one JSON body);
- stream: the same answer streamed a word a chunk (~720 SSE events, ~100 KB), consumed to the end
  (a tenth of ``--calls``).

For each case, per call:

- baseline: the SDK on an ``httpx2.MockTransport`` serving the same bytes from memory
  (building the request, the client's send path, the SDK's parsing; no socket, no tape);
- replay: the SDK on its default transport inside ``replay(tape)``, every call a hit on a tape
  of ``--calls`` recorded calls (recorded once from a fake provider on 127.0.0.1), with replay
  spans on (the default) and off (``spans=False``).

The target (issue 12): replay ≤ 1.5× baseline for the whole 4 KB completion.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.model_server import fake_provider

from otel_agent_replay import agent_run, record, replay

CONTENT = ("The quick brown fox jumps over the lazy dog. " * 90)[:4000]
MESSAGES: list[Any] = [{"role": "user", "content": CONTENT}]


def _kwargs(stream: bool) -> dict[str, Any]:
    kw: dict[str, Any] = {"model": "gpt-bench", "messages": MESSAGES}
    if stream:
        kw.update(stream=True, stream_options={"include_usage": True})
    return kw


def _call(client: openai.OpenAI, stream: bool) -> None:
    result = client.chat.completions.create(**_kwargs(stream))
    if stream:
        for _ in result:  # type: ignore[attr-defined]
            pass


def _per_call(fn: Any, n: int, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-http-"))
    rows = []
    for stream in (False, True):
        n = args.calls if not stream else max(10, args.calls // 10)
        tape = root / f"{'stream' if stream else 'whole'}.jsonl"
        with fake_provider() as fp:
            live = openai.OpenAI(base_url=fp.openai_url, api_key="sk-bench", max_retries=0)
            raw = live.chat.completions.with_raw_response.create(**_kwargs(stream))
            payload, headers = raw.http_response.read(), dict(raw.http_response.headers)
            with record(tape), agent_run("bench"):
                for _ in range(n * 6):
                    _call(live, stream)

        def mock(request: httpx2.Request, payload: bytes = payload, headers: dict[str, str] = headers) -> Any:
            kept = {"content-type": headers["content-type"]}
            return httpx2.Response(200, headers=kept, content=payload)

        baseline_client = openai.OpenAI(
            base_url="http://127.0.0.1:9/v1",
            api_key="sk-bench",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(mock)),
        )
        replay_client = openai.OpenAI(base_url=fp.openai_url, api_key="sk-bench", max_retries=0)
        baseline = _per_call(lambda c=baseline_client, s=stream: _call(c, s), n)
        with replay(tape, allow_unused=True):
            with_spans = _per_call(lambda c=replay_client, s=stream: _call(c, s), n, rounds=3)
        with replay(tape, spans=False, allow_unused=True):
            without = _per_call(lambda c=replay_client, s=stream: _call(c, s), n, rounds=3)
        rows.append(
            {
                "case": "stream" if stream else "whole",
                "response_bytes": len(payload),
                "baseline_us": round(baseline * 1e6, 1),
                "replay_us": round(with_spans * 1e6, 1),
                "replay_no_spans_us": round(without * 1e6, 1),
                "ratio": round(with_spans / baseline, 2),
                "ratio_no_spans": round(without / baseline, 2),
            }
        )
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
