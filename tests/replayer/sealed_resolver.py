"""Name resolution in a strict replay against a real resolver: run in a network namespace of its own whose
``/etc/resolv.conf`` names 127.0.0.1, where this script serves DNS on port 53 (a sink that counts the bytes
of every query and answers NXDOMAIN):

    unshare -mn sh -c 'ip link set lo up && mount --bind RESOLV_CONF /etc/resolv.conf && exec python THIS TAPE'

Each resolver call is made once outside a replay (its query reaches the sink: the resolver is really
pointed at it) and once inside ``replay(..., allow_hosts=[])``. Prints one JSON line: the bytes the sink
received per call outside and inside, which calls raised ``NetworkBlocked``, and ``blocked_connections``.
"""

from __future__ import annotations

import _socket
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))  # tests/: the helpers

from helpers.pinged import ping, ping_tape

from otel_agent_replay import NetworkBlocked, agent_run, replay

NAME = "agent.example.test"
ADDRESS = "192.0.2.7"  # TEST-NET-1: its reverse lookup is a PTR query


class DnsSink:
    """UDP DNS on 127.0.0.1:53: counts every byte, answers each query NXDOMAIN."""

    def __init__(self) -> None:
        self.received = 0
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            query, peer = self.sock.recvfrom(4096)
            with self.lock:
                self.received += len(query)
            end = 12
            while end < len(query) and query[end] != 0:
                end += query[end] + 1
            question = query[12 : end + 5]
            self.sock.sendto(query[:2] + b"\x81\x83" + query[4:6] + b"\0\0\0\0\0\0" + question, peer)

    def seen(self) -> int:
        time.sleep(0.05)  # a query in flight would have arrived by now
        with self.lock:
            return self.received


CALLS: dict[str, Callable[[], object]] = {
    "getaddrinfo": lambda: socket.getaddrinfo(NAME, 443),
    "gethostbyname": lambda: socket.gethostbyname(NAME),
    "gethostbyname_ex": lambda: socket.gethostbyname_ex(NAME),
    "gethostbyaddr": lambda: socket.gethostbyaddr(ADDRESS),
    "getnameinfo": lambda: socket.getnameinfo((ADDRESS, 443), 0),
    "_socket.gethostbyname": lambda: _socket.gethostbyname(NAME),
}


def _bytes_of(call: Callable[[], object], sink: DnsSink) -> tuple[int, str]:
    before = sink.seen()
    try:
        call()
        outcome = "answered"
    except NetworkBlocked:
        outcome = "NetworkBlocked"
    except OSError as exc:  # NXDOMAIN: gaierror, herror
        outcome = type(exc).__name__
    return sink.seen() - before, outcome


def main() -> None:
    tape = ping_tape(Path(sys.argv[1]))
    sink = DnsSink()
    out: dict[str, Any] = {"outside": {}, "inside": {}, "refused": []}
    for name, call in CALLS.items():
        out["outside"][name] = _bytes_of(call, sink)[0]
    session = None
    try:
        with replay(tape, http=False, allow_hosts=[]) as session, agent_run("a"):
            ping()
            for name, call in CALLS.items():
                sent, outcome = _bytes_of(call, sink)
                out["inside"][name] = sent
                if outcome == "NetworkBlocked":
                    out["refused"].append(name)
    except NetworkBlocked as exc:
        out["ended"] = str(exc).split(" during ")[0]
    assert session is not None
    out["blocked_connections"] = session.stats.blocked_connections
    print(json.dumps(out))


if __name__ == "__main__":
    main()
