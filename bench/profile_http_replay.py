"""Where a replayed HTTP GET spends its time: ``cProfile`` shares of the parts of one client call.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/profile_http_replay.py                   # httpx, spans on, 800 GETs
    .venv/bin/python bench/profile_http_replay.py --client requests --spans off --calls 400

The GET, the answer and the clients are ``bench_vcr.py``'s: a tape of ``--calls`` + 200 recorded GETs
from a local server (stopped before the replay), then, inside ``replay(tape)``, 100 warm-up GETs and
``--calls`` profiled ones. Each part's cumulative time is printed as a share of the client's whole
call (the profiler inflates every function call, so the shares, not the times, are the figure).

``--pieces`` times the parts instead (no profiler; CPU time, best of 5, in the same process and
minutes): the client's whole replayed GET, the same GET over ``bench_vcr.py``'s floor (the client around
a transport that does nothing), the whole GET again with the exchange's ``answer`` replaced by the
result it gave (so the replay's call in place is the difference, and the rest over the floor is this
package's HTTP layer), and alone, on the same request: the capture point's ``Request``,
``intercept`` (routes, spec, arguments), the exchange's ``answer`` (the replay's call: key, decision,
the recorded result, the hit's span), and the client's response built from the result.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_vcr
from benchlib import loadavg

from otel_agent_replay import record, replay
from otel_agent_replay.integrations._exchange import Exchange, intercept

PARTS = {
    "the client's whole call": [("httpx/_client.py", "get"), ("requests/sessions.py", "get")],
    "our capture point": [
        ("integrations/clients/_httpx.py", "handle_request"),
        ("integrations/clients/_requests.py", "send"),
    ],
    "  intercept (routes, spec, arguments)": [("integrations/_exchange.py", "intercept")],
    "  the replay's call (decide, serve, span)": [("replayer/_session.py", "call")],
    "    capture the arguments (key them)": [("capture/_pipeline.py", "capture_args")],
    "      their redaction check": [("capture/_redact.py", "redact_json")],
    "      the secret scanner": [("capture/_detector.py", "known_tokens")],
    "    the hit's span": [("replayer/_serving.py", "finish")],
    "      the SDK's start_span": [("opentelemetry/sdk/trace/__init__.py", "start_span")],
    "      the SDK's attribute cleaning": [("opentelemetry/attributes/__init__.py", "_set_items")],
    "  the client's response from the result": [
        ("integrations/clients/_httpx.py", "build_response"),
        ("integrations/clients/_requests.py", "_response"),
    ],
}


FLOOR = "floor: the client around a transport doing nothing"
PIECES_STEPS = 3_000
"""Steps on the tape for ``--pieces`` (every whole GET and every answer is a hit: 5 × 150 + 5 × 400 + 2)."""


def _best(fn: Callable[[], object], number: int = 300) -> float:
    """CPU µs per call (``time.process_time``: a loaded machine's waits are not counted), the best of 5 repeats."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=5, timer=time.process_time)) / number * 1e6


def _pieces(client: str, url: str, get: Callable[[], object], floor: Callable[[], object]) -> dict[str, float]:
    """Inside a replay: the whole GET, the floor, and the replay's parts alone on one request."""
    if client == "httpx":
        import httpx

        from otel_agent_replay.integrations.clients import _httpx as capture

        sent = httpx.Request("GET", url)

        def request() -> object:
            return capture._request(sent, sent.read())

        def response(result: dict[str, Any]) -> object:
            return capture.build_response(httpx, result, sent)
    else:
        import requests

        from otel_agent_replay.integrations.clients import _requests as capture

        session = requests.Session()
        prepared = session.prepare_request(requests.Request("GET", url))
        adapter = session.get_adapter(url)

        def request() -> object:
            return capture._as_request(prepared)

        def response(result: dict[str, Any]) -> object:
            return capture._response(requests, adapter, prepared, result, False)

    asked: Any = request()
    result = intercept(asked).answer(lambda: {})  # type: ignore[union-attr]
    whole = _best(get, 150)
    original = Exchange.answer
    Exchange.answer = lambda self, live: result  # type: ignore[method-assign,assignment,misc]
    try:
        without = _best(get, 150)
    finally:
        Exchange.answer = original  # type: ignore[method-assign]
    return {
        "the whole replayed GET": whole,
        "the same, the replay's call replaced by its result": without,
        FLOOR: _best(floor),
        "the capture point's Request": _best(request, 3000),
        "intercept (routes, spec, arguments)": _best(lambda: intercept(asked), 3000),
        "intercept + answer (key, decision, result, span)": _best(lambda: intercept(asked).answer(lambda: {}), 400),  # type: ignore[union-attr]
        "the client's response from the result": _best(lambda: response(result), 3000),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", choices=["httpx", "requests"], default="httpx")
    parser.add_argument("--spans", choices=["on", "off"], default="on")
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--pieces", action="store_true", help="time the parts alone instead of profiling")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="profile-http-"))
    server, url = bench_vcr.serve()
    get, _ = bench_vcr._clients(url)[args.client]
    tape = work / "tape.jsonl"
    try:
        with record(tape):
            for _ in range(PIECES_STEPS if args.pieces else args.calls + 200):
                get()
    finally:
        server.shutdown()
        server.server_close()
    load = loadavg()
    if args.pieces:
        floor = bench_vcr._floors(url)[args.client]
        with replay(tape, spans=args.spans == "on", allow_unused=True):
            parts = _pieces(args.client, url, get, floor)
        tape.unlink()
        work.rmdir()
        print(f"profile_http_replay --pieces: {args.client}, spans {args.spans}; load {load} → {loadavg()}")
        for label, us in parts.items():
            print(f"  {label:<52} {us:8.1f} µs  {us / parts[FLOOR]:5.2f}x the floor")
        return 0
    profile = cProfile.Profile()
    with replay(tape, spans=args.spans == "on", allow_unused=True):
        for _ in range(100):
            get()
        profile.enable()
        for _ in range(args.calls):
            get()
        profile.disable()
    tape.unlink()
    work.rmdir()
    cumulative: dict[tuple[str, str], float] = {}
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        for wanted in PARTS.values():
            for suffix, func in wanted:
                if name == func and file.endswith(suffix):
                    cumulative[(suffix, func)] = cumulative.get((suffix, func), 0.0) + ct
    whole = sum(cumulative.get(w, 0.0) for w in PARTS["the client's whole call"])
    print(f"profile_http_replay: {args.client}, spans {args.spans}, {args.calls} GETs; load {load}")
    for label, wanted in PARTS.items():
        spent = sum(cumulative.get(w, 0.0) for w in wanted)
        if spent:
            print(f"  {label:<44} {100 * spent / whole:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
