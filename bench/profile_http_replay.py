"""Where a replayed HTTP GET spends its time: ``cProfile`` shares of the parts of one client call.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/profile_http_replay.py                   # httpx, spans on, 800 GETs
    .venv/bin/python bench/profile_http_replay.py --client requests --spans off --calls 400

The GET, the answer and the clients are ``bench_vcr.py``'s: a tape of ``--calls`` + 200 recorded GETs
from a local server (stopped before the replay), then, inside ``replay(tape)``, 100 warm-up GETs and
``--calls`` profiled ones. Each part's cumulative time is printed as a share of the client's whole
call (the profiler inflates every function call, so the shares, not the times, are the figure).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import bench_vcr
from benchlib import loadavg

from otel_agent_replay import record, replay

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", choices=["httpx", "requests"], default="httpx")
    parser.add_argument("--spans", choices=["on", "off"], default="on")
    parser.add_argument("--calls", type=int, default=800)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="profile-http-"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), bench_vcr._Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}{bench_vcr.PATH}"
    get, _ = bench_vcr._clients(url)[args.client]
    tape = work / "tape.jsonl"
    try:
        with record(tape):
            for _ in range(args.calls + 200):
                get()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    load = loadavg()
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
