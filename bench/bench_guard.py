"""What the socket guard of strict replays costs per send, and what its audit hook costs the process.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/bench_guard.py             # about 15 seconds
    .venv/bin/python bench/bench_guard.py --sends 20000 --repeat 5

A TCP connection on 127.0.0.1 (the reading end drained after every batch, in the same thread, so
the kernel's buffers never fill); one ``send`` of 64 bytes timed per operation, in four states:

- no replay: nothing installed, ``socket.socket.send`` is the C method;
- outside: a strict replay is active in the process, and the sender's context has no replay (a
  background thread: an exporter, a pool's worker started before the replay);
- inside: the sender runs in the replay's context, its peer allowed (loopback by default), already
  counted: the guard's fast path (``getpeername`` and a dictionary lookup);
- inside, TLS-free ``sendall``: the same for ``sendall``.

A send is a system call, and on a loaded machine its time varies by more than the guard costs,
so the guard's own work is also timed alone: the send wrapper with a no-op in place of the real
send, outside and inside the replay, and inside on a socket the replay has not checked yet (the
slow path: ``getpeername``, the host's verdict, the loopback count), which each connection takes
once.

And the audit hook, which stays once added (PEP 578): an audited call that is not a socket's
(``sys._getframe``, raised on every call) timed before the first replay and after the last one.
Each row is the median of ``--repeat`` repetitions; the cost is the difference to "no replay".
Times are the thread's CPU time (``time.thread_time_ns``), not the wall clock: on a machine shared
with other jobs, the wall clock counts the time the scheduler gave to others.
"""

from __future__ import annotations

import argparse
import contextvars
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from otel_agent_replay import agent_run, record, replay, tool
from otel_agent_replay.seal import _network

PAYLOAD = b"x" * 64
BATCH = 100


@tool(side_effect="read_only")
def ping() -> str:
    return "pong"


def _pair() -> tuple[socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    server.setblocking(False)
    return client, server


def _drain(server: socket.socket, expected: int) -> None:
    got = 0
    while got < expected:
        try:
            got += len(server.recv(1 << 20))
        except BlockingIOError:
            time.sleep(0)


def _per_send(send: Callable[[bytes], object], server: socket.socket, sends: int) -> float:
    """Nanoseconds per send (the drain after each batch is timed apart and taken out)."""
    batches = max(1, sends // BATCH)
    sending = 0
    for _ in range(batches):
        start = time.thread_time_ns()
        for _ in range(BATCH):
            send(PAYLOAD)
        sending += time.thread_time_ns() - start
        _drain(server, BATCH * len(PAYLOAD))
    return sending / (batches * BATCH)


def _median(measure: Callable[[], float], repeat: int) -> float:
    return statistics.median(measure() for _ in range(repeat))


def _check_ns(check: Callable[[], object], calls: int) -> float:
    start = time.thread_time_ns()
    for _ in range(calls):
        check()
    return (time.thread_time_ns() - start) / calls


def _getframe_ns(calls: int) -> float:
    getframe = sys._getframe
    start = time.thread_time_ns()
    for _ in range(calls):
        getframe()
    return (time.thread_time_ns() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=20_000, help="sends per repetition")
    parser.add_argument("--repeat", type=int, default=7, help="repetitions (the median is shown)")
    options = parser.parse_args()
    sends, repeat = options.sends, options.repeat

    frames_before = _median(lambda: _getframe_ns(sends * 10), repeat)
    client, server = _pair()
    rows: dict[str, float] = {}
    checks: dict[str, float] = {}
    rows["no replay: send"] = _median(lambda: _per_send(client.send, server, sends), repeat)
    rows["no replay: sendall"] = _median(lambda: _per_send(client.sendall, server, sends), repeat)
    with tempfile.TemporaryDirectory() as folder:
        tape = Path(folder) / "guard.jsonl"
        with record(tape), agent_run("bench"):
            ping()
        with replay(tape, http=False) as session, agent_run("bench"):
            ping()
            client.send(PAYLOAD)  # counted once here (loopback): the rows below are the fast path
            _drain(server, len(PAYLOAD))
            outside = contextvars.Context()  # a context without the replay, like a background thread's
            rows["outside the replay: send"] = _median(
                lambda: outside.run(_per_send, client.send, server, sends), repeat
            )
            rows["inside the replay: send"] = _median(lambda: _per_send(client.send, server, sends), repeat)
            rows["inside the replay: sendall"] = _median(lambda: _per_send(client.sendall, server, sends), repeat)
            noop = _network._checked(lambda sock, data: None)  # the wrapper, sending nothing
            guard = session.network_guard
            assert guard is not None

            def first_send() -> None:
                guard._forget(client)
                noop(client, PAYLOAD)

            checks["check alone, outside the replay"] = _median(
                lambda: outside.run(_check_ns, lambda: noop(client, PAYLOAD), sends), repeat
            )
            checks["check alone, inside the replay"] = _median(
                lambda: _check_ns(lambda: noop(client, PAYLOAD), sends), repeat
            )
            checks["check alone, a socket's first send"] = _median(lambda: _check_ns(first_send, sends), repeat)
            checks["getpeername (a system call)"] = _median(lambda: _check_ns(client.getpeername, sends), repeat)
        assert session.stats.loopback_connections == 1 and session.stats.blocked_connections == 0
    frames_after = _median(lambda: _getframe_ns(sends * 10), repeat)
    client.close()
    server.close()

    base = {"send": rows["no replay: send"], "sendall": rows["no replay: sendall"]}
    print(f"Python {sys.version.split()[0]}, {sends} sends of {len(PAYLOAD)} B per repetition, median of {repeat}")
    print(f"{'case':36} {'ns/send':>9} {'added ns':>9}")
    for name, value in rows.items():
        added = value - base[name.rsplit(": ", 1)[1]]
        print(f"{name:36} {value:9.0f} {added:9.0f}")
    for name, value in checks.items():
        print(f"{name:36} {'':9} {value:9.0f}")
    print(f"{'sys._getframe, no audit hook':36} {frames_before:9.1f}")
    print(f"{'sys._getframe, hook, no replay':36} {frames_after:9.1f} {frames_after - frames_before:9.1f}")


if __name__ == "__main__":
    main()
