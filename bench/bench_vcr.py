"""The same HTTP call replayed from a tape and by vcrpy from a cassette, beside the client's own work.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/bench_vcr.py                 # 9 rounds of 200 calls per configuration
    .venv/bin/python bench/bench_vcr.py --rounds 5 --calls 100 --clients requests

Like for like (issue 34): one ``GET /search?query=refund+policy&limit=5`` answered with the same
3.9 KB JSON document (``bench_record.DOCUMENT``), read with the client's ``.json()``, through the same
client object, for ``requests`` (a ``Session``) and ``httpx`` (a ``Client``). Per client:

- memory: the client's own work on a response held in memory, no socket, no tape, no cassette
  (requests: an ``HTTPAdapter`` whose ``send`` wraps the bytes in a ``urllib3.HTTPResponse`` and hands
  it to ``build_response``; httpx: an ``httpx.MockTransport``);
- tape, spans on / off: inside ``replay(tape)`` (``spans=False`` for off), every call a hit on a tape of
  as many recorded GETs;
- vcrpy: inside ``vcr.use_cassette(cassette, record_mode="none", allow_playback_repeats=True)``, the
  cassette recorded from the same GET;
- floor: the client around a transport that does nothing (requests: an adapter whose ``send`` returns a
  ready ``Response``, body in ``_content``; httpx: a transport returning a response with headers built
  once and the body unread): what the client costs whatever answers under it, so vcrpy / floor is the
  most any replay answering at the adapter or transport can be faster than vcrpy.

The server the tape and the cassette were recorded from is stopped before anything is timed (a GET
to it is checked to be refused). Each round times every configuration once, in a new order each
round; a configuration's figure is CPU time (``time.process_time``) per call inside the block
(entering and leaving the block are not timed, for either tool). The ratios are taken within each
round and the median over the rounds is printed with their spread (min..max).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import orjson
import requests
import requests.adapters
import urllib3
import vcr
from bench_record import DOCUMENT
from benchlib import loadavg

from otel_agent_replay import record, replay

PATH = "/search?query=refund+policy&limit=5"
TARGET_VCR = 2.0
TARGET_MEMORY = 1.5


class _Handler(BaseHTTPRequestHandler):
    body = orjson.dumps(DOCUMENT)
    served = 0

    def do_GET(self) -> None:
        type(self).served += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _MemoryAdapter(requests.adapters.HTTPAdapter):
    """requests' own response building and parsing over bytes in memory."""

    def __init__(self, payload: bytes) -> None:
        super().__init__()
        self._payload = payload

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        raw = urllib3.HTTPResponse(
            body=io.BytesIO(self._payload),
            headers={"content-type": "application/json", "content-length": str(len(self._payload))},
            status=200,
            preload_content=False,
            decode_content=False,
        )
        return self.build_response(request, raw)


class _ReadyAdapter(requests.adapters.HTTPAdapter):
    """The floor under requests' adapter: ``send`` hands back a ``requests.Response`` with everything set
    and the body in ``_content``, no urllib3 response, nothing read (the least any adapter can do)."""

    def __init__(self, payload: bytes) -> None:
        super().__init__()
        self._payload = payload

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        response = requests.Response()
        response.status_code = 200
        response.headers = requests.structures.CaseInsensitiveDict({"content-type": "application/json"})
        response.encoding = "utf-8"
        response.reason = "OK"
        response.url = request.url or ""
        response.request = request
        response.connection = self  # type: ignore[attr-defined]
        response._content = self._payload
        response._content_consumed = True  # type: ignore[attr-defined]
        return response


class _ReadyTransport(httpx.BaseTransport):
    """The floor under httpx's transport: ``handle_request`` hands back a response whose headers are built
    once (the client copies them) and whose body is an unread ``ByteStream`` (the client reads it)."""

    def __init__(self, payload: bytes) -> None:
        self._payload = payload
        self._headers = httpx.Headers({"content-type": "application/json", "content-length": str(len(payload))})

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=self._headers, stream=httpx.ByteStream(self._payload), request=request)


Get = Callable[[], object]


def _floors(url: str) -> dict[str, Get]:
    """Per client: the same GET over the ready adapter / transport (what the client does around its transport)."""
    session = requests.Session()
    session.mount("http://", _ReadyAdapter(_Handler.body))
    client = httpx.Client(transport=_ReadyTransport(_Handler.body))
    return {"requests": lambda: session.get(url).json(), "httpx": lambda: client.get(url).json()}


def _clients(url: str) -> dict[str, tuple[Get, Get]]:
    """Per client: (the GET through the real client, the same GET on a response held in memory)."""
    body = _Handler.body
    session = requests.Session()
    memory_session = requests.Session()
    memory_session.mount("http://", _MemoryAdapter(body))
    client = httpx.Client()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=body)

    memory_client = httpx.Client(transport=httpx.MockTransport(answer))
    return {
        "requests": (lambda: session.get(url).json(), lambda: memory_session.get(url).json()),
        "httpx": (lambda: client.get(url).json(), lambda: memory_client.get(url).json()),
    }


def _timed(block: Callable[[], AbstractContextManager[Any]], get: Get, calls: int) -> float:
    """CPU µs per call of ``calls`` GETs inside ``block()``; every answer is checked."""
    with block():
        start = time.process_time_ns()
        for _ in range(calls):
            got = get()
        spent = time.process_time_ns() - start
        if got != DOCUMENT:
            raise RuntimeError("the answer is not the recorded document")
    return spent / calls / 1000


def serve() -> tuple[ThreadingHTTPServer, str]:
    """The search server on a free loopback port, served on a daemon thread, and the GET's URL on it (the
    other HTTP scripts of bench/ record from it too); the caller shuts it down."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}{PATH}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", nargs="*", default=["requests", "httpx"], choices=["requests", "httpx"])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    load_start = loadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-vcr-"))
    server, url = serve()
    clients = {name: pair for name, pair in _clients(url).items() if name in args.clients}
    tapes: dict[str, Path] = {}
    cassettes: dict[str, Path] = {}
    try:
        for name, (get, _) in clients.items():
            tapes[name] = work / f"{name}.jsonl"
            with record(tapes[name]):
                for _ in range(args.calls):
                    get()
            cassettes[name] = work / f"{name}.yaml"
            with vcr.use_cassette(str(cassettes[name]), record_mode="once"):
                get()
    finally:
        server.shutdown()
        server.server_close()
    served = _Handler.served
    try:
        requests.get(url, timeout=2)
        raise RuntimeError("the server still answers: the replays would prove nothing")
    except requests.exceptions.ConnectionError:
        pass

    floors = _floors(url)

    def configs(name: str) -> dict[str, tuple[Callable[[], AbstractContextManager[Any]], Get]]:
        get, memory = clients[name]
        return {
            "memory": (nullcontext, memory),
            "floor": (nullcontext, floors[name]),
            "tape, spans on": (lambda: replay(tapes[name], allow_unused=True), get),
            "tape, spans off": (lambda: replay(tapes[name], spans=False, allow_unused=True), get),
            "vcrpy": (
                lambda: vcr.use_cassette(str(cassettes[name]), record_mode="none", allow_playback_repeats=True),
                get,
            ),
        }

    rng = random.Random(34)
    results: dict[str, dict[str, list[float]]] = {name: {} for name in clients}
    for name in clients:
        for block, get in configs(name).values():
            _timed(block, get, min(args.calls, 50))  # warm-up
    for _ in range(args.rounds):
        order = [(name, how) for name in clients for how in configs(name)]
        rng.shuffle(order)
        for name, how in order:
            block, get = configs(name)[how]
            results[name].setdefault(how, []).append(_timed(block, get, args.calls))
    if _Handler.served != served:
        raise RuntimeError("a timed call reached the server")
    load_end = loadavg()
    out: dict[str, Any] = {
        "load": [load_start, load_end],
        "rounds": args.rounds,
        "calls": args.calls,
        "versions": {k: metadata.version(k) for k in ("requests", "urllib3", "httpx", "vcrpy")},
        "clients": {},
    }
    print(f"bench_vcr: {args.rounds} rounds × {args.calls} calls; load {load_start} → {load_end}; CPU µs per call")
    print(f"  {', '.join(f'{k} {v}' for k, v in out['versions'].items())}")
    for name, rows in results.items():
        print(f"\n{name}: GET {PATH} → {len(_Handler.body):,}-byte JSON, .json()")
        data: dict[str, Any] = {}
        for how, us in rows.items():
            print(f"  {how:<16} {statistics.median(us):8.1f} µs  ({min(us):.1f}..{max(us):.1f})")
            data[how] = {"median_us": round(statistics.median(us), 1), "rounds_us": [round(u, 1) for u in us]}
        ceiling = [v / f for v, f in zip(rows["vcrpy"], rows["floor"], strict=True)]
        floor = [f / m for f, m in zip(rows["floor"], rows["memory"], strict=True)]
        print(
            f"  floor: {statistics.median(floor):.2f}x the client's own work ({min(floor):.2f}..{max(floor):.2f}); "
            f"vcrpy is {statistics.median(ceiling):.2f}x it ({min(ceiling):.2f}..{max(ceiling):.2f}): the most any "
            "replay under the client's transport can be faster than vcrpy"
        )
        data["floor"]["over_memory"] = round(statistics.median(floor), 2)
        data["floor"]["vcrpy_over_floor"] = round(statistics.median(ceiling), 2)
        for how in ("tape, spans on", "tape, spans off"):
            faster = [v / t for v, t in zip(rows["vcrpy"], rows[how], strict=True)]
            over = [t / m for t, m in zip(rows[how], rows["memory"], strict=True)]
            f_med, o_med = statistics.median(faster), statistics.median(over)
            f_ok = "PASS" if f_med >= TARGET_VCR else "MISS"
            o_ok = "PASS" if o_med <= TARGET_MEMORY else "MISS"
            print(
                f"  {how}: {f_med:.2f}x faster than vcrpy ({min(faster):.2f}..{max(faster):.2f}; ≥ {TARGET_VCR}x "
                f"{f_ok}); {o_med:.2f}x the client's own work ({min(over):.2f}..{max(over):.2f}; ≤ {TARGET_MEMORY}x "
                f"{o_ok})"
            )
            data[how]["faster_than_vcrpy"] = round(f_med, 2)
            data[how]["over_memory"] = round(o_med, 2)
        out["clients"][name] = data
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    for path in [*tapes.values(), *cassettes.values()]:
        path.unlink(missing_ok=True)
    os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
