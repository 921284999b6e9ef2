"""Function calls per replayed HTTP GET, by whose code they are: a count that does not move with the machine's load.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/count_http_replay.py                      # httpx and requests, 200 GETs each
    .venv/bin/python bench/count_http_replay.py --clients httpx --top 30

The GET, the answer and the clients are ``bench_vcr.py``'s: a tape of recorded GETs from a local server
(stopped before the replay), then, inside ``replay(tape)`` with spans on and then off, 50 warm-up GETs and
``--calls`` counted ones under ``sys.setprofile``, beside the same GET on ``bench_vcr.py``'s in-memory
response (the client's own work) and its floor (the client around a transport that does nothing). Every
Python function entered and every C function called counts one, grouped by where its code lives: this
package (ours), the client (httpx, httpcore, requests, urllib3), OpenTelemetry, the standard library and
any other package, and C functions (builtins and C methods).
A call is not a fixed cost (``isinstance`` is cheaper than ``start_span``), so this says where the calls
are and what a change removed, and the timed ratios stay ``bench_vcr.py``'s. ``--top`` lists the
functions whose counts differ most between spans on and off (the replay span's calls).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import FrameType
from typing import Any

import bench_vcr

from otel_agent_replay import record, replay

GROUPS = (
    ("ours", ("otel_agent_replay/",)),
    ("client", ("httpx/", "httpcore/", "requests/", "urllib3/")),
    ("OpenTelemetry", ("opentelemetry/",)),
)
OTHERS = "stdlib, others"
"""The standard library's Python functions, and any other package's."""


def _group(filename: str) -> str:
    for name, marks in GROUPS:
        if any(mark in filename for mark in marks):
            return name
    return OTHERS


def _counted(
    block: Callable[[], AbstractContextManager[Any]], get: Callable[[], object], n: int
) -> collections.Counter[str]:
    """Calls made by ``n`` GETs inside ``block()``, per function (``C:name`` for a C function)."""
    counts: collections.Counter[str] = collections.Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            counts[f"{code.co_filename}:{code.co_name}"] += 1
        elif event == "c_call":
            counts[f"C:{getattr(arg, '__qualname__', arg)}"] += 1

    with block():
        for _ in range(50):
            get()
        sys.setprofile(profile)
        try:
            for _ in range(n):
                get()
        finally:
            sys.setprofile(None)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", nargs="*", default=["httpx", "requests"], choices=["httpx", "requests"])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--top", type=int, default=0, help="list the functions spans on adds most calls to")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="count-http-"))
    server, url = bench_vcr.serve()
    clients = {name: pair for name, pair in bench_vcr._clients(url).items() if name in args.clients}
    tapes: dict[str, Path] = {}
    try:
        for name, (get, _) in clients.items():
            tapes[name] = work / f"{name}.jsonl"
            with record(tapes[name]):
                for _ in range(args.calls + 60):
                    get()
    finally:
        server.shutdown()
        server.server_close()
    floors = bench_vcr._floors(url)
    print(f"count_http_replay: calls per GET (sys.setprofile, {args.calls} GETs after 50 warm-up)")
    for name, (get, memory) in clients.items():
        tape = tapes[name]
        rows = {
            "memory": _counted(nullcontext, memory, args.calls),
            "floor": _counted(nullcontext, floors[name], args.calls),
            "tape, spans on": _counted(lambda t=tape: replay(t, allow_unused=True), get, args.calls),  # type: ignore[misc]
            "tape, spans off": _counted(lambda t=tape: replay(t, spans=False, allow_unused=True), get, args.calls),  # type: ignore[misc]
        }
        groups = [g for g, _ in GROUPS] + [OTHERS, "C functions"]
        print(f"\n{name}:\n  {'':<20} {'total':>8}  " + "  ".join(f"{g:>14}" for g in groups))
        for how, counts in rows.items():
            per: collections.Counter[str] = collections.Counter()
            for key, n in counts.items():
                per["C functions" if key.startswith("C:") else _group(key)] += n
            total = sum(per.values()) / args.calls
            cells = "  ".join(f"{per[g] / args.calls:>14.1f}" for g in groups)
            print(f"  {how:<20} {total:>8.1f}  {cells}")
        if args.top:
            diff = rows["tape, spans on"].copy()
            diff.subtract(rows["tape, spans off"])
            print(f"  spans on - off, the {args.top} functions with the most calls added:")
            for key, n in sorted(diff.items(), key=lambda kv: -kv[1])[: args.top]:
                if n:
                    print(f"    {n / args.calls:7.1f}  {key.split('site-packages/')[-1]}")
    for path in tapes.values():
        path.unlink(missing_ok=True)
    work.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
