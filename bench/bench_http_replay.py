"""What a replayed HTTP request costs over the client's own parsing of the same response from memory.

Run it as a script (it is not a test and pytest does not collect it)::

    .venv/bin/python bench/bench_http_replay.py               # about a minute
    .venv/bin/python bench/bench_http_replay.py --calls 100 --clients requests

Each client sends ``POST /v1/chat/completions`` with a ~4 KB prompt and reads the answer:

- whole: a ~4 KB JSON chat completion, decoded with the client's ``.json()``;
- stream: the same answer streamed a word an event (~720 SSE events), read line by line to the end
  (a tenth of ``--calls``).

Per call, for each client:

- memory: the client's own stack on a response held in memory, no socket and no tape (httpx: an
  ``httpx.MockTransport``; requests: an ``HTTPAdapter`` whose ``send`` wraps the bytes in a
  ``urllib3.HTTPResponse`` and hands it to ``build_response``, what mocking libraries do; aiohttp:
  a connector whose connections are aiohttp's own ``ResponseHandler`` on a transport held in memory,
  so aiohttp writes the request and parses the answer with its own parser; openai+aiohttp: the
  openai SDK's aiohttp client, ``DefaultAioHttpClient``, on that connector);
- memory socket (requests): its whole stack, the urllib3 pool and connection and http.client's parsing,
  on a socket whose answer is held in memory (what a replay still runs: the tape answers below it);
- live: the same request to the fake provider on 127.0.0.1 (for scale: a real socket round trip);
- replay: inside ``replay(tape)``, every call a hit on a tape of the recorded calls, with replay spans
  on (the default) and off (``spans=False``).

The ratio is replay / memory; the target (issue 19, as for httpx in issue 12) is ≤ 1.5× for the
whole 4 KB response. Add a client: one entry in ``CLIENTS``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai
import requests
import requests.adapters
import urllib3
from aiohttp.client_proto import ResponseHandler
from openai._vendor.httpx_aiohttp.transport import AiohttpTransport

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.model_server import fake_provider

from otel_agent_replay import agent_run, record, replay

CONTENT = ("The quick brown fox jumps over the lazy dog. " * 90)[:4000]


def _body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-bench", "messages": [{"role": "user", "content": CONTENT}]}
    if stream:
        body["stream"] = True
    return body


Call = Callable[[str, bool], object]
"""(base URL, stream) → one request sent and its answer read to the end."""


@dataclass(frozen=True)
class Client:
    """How one HTTP client sends the request, live or replayed, and on a response held in memory."""

    call: Callable[[], Call]
    memory: Callable[[bytes, str], Call]
    socket: Callable[[bytes, str], Call] | None = None
    """The client's whole stack (pool, connection, http.client's parsing) on a socket held in memory."""


def _httpx_call() -> Call:
    client = httpx.Client()

    def call(url: str, stream: bool) -> object:
        if not stream:
            return client.post(url + "/v1/chat/completions", json=_body(False)).json()
        with client.stream("POST", url + "/v1/chat/completions", json=_body(True)) as response:
            return sum(1 for _ in response.iter_lines())

    return call


def _httpx_memory(payload: bytes, content_type: str) -> Call:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=payload)

    client = httpx.Client(transport=httpx.MockTransport(answer))

    def call(url: str, stream: bool) -> object:
        if not stream:
            return client.post(url + "/v1/chat/completions", json=_body(False)).json()
        with client.stream("POST", url + "/v1/chat/completions", json=_body(True)) as response:
            return sum(1 for _ in response.iter_lines())

    return call


def _requests_call() -> Call:
    return _requests_on(requests.Session())


class _MemoryAdapter(requests.adapters.HTTPAdapter):
    """requests' own response building and parsing over bytes in memory."""

    def __init__(self, payload: bytes, content_type: str) -> None:
        super().__init__()
        self._payload = payload
        self._content_type = content_type

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        raw = urllib3.HTTPResponse(
            body=io.BytesIO(self._payload),
            headers={"content-type": self._content_type, "content-length": str(len(self._payload))},
            status=200,
            preload_content=False,
            decode_content=False,
        )
        return self.build_response(request, raw)


class _MemorySocket:
    """A connected socket that swallows what is sent and answers with one HTTP response from memory."""

    def __init__(self, answer: bytes) -> None:
        self._answer = answer

    def sendall(self, _data: bytes) -> None:
        pass

    def makefile(self, *_args: object, **_kwargs: object) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self._answer))

    def settimeout(self, _timeout: object) -> None:
        pass

    def close(self) -> None:
        pass


def _socket_adapter(payload: bytes, content_type: str) -> requests.adapters.HTTPAdapter:
    """requests on its real urllib3 pool and http.client, the socket replaced by bytes in memory."""
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n"
    answer = head.encode() + payload

    class Connection(urllib3.connection.HTTPConnection):
        def connect(self) -> None:
            self.sock = _MemorySocket(answer)  # type: ignore[assignment]

        @property
        def is_connected(self) -> bool:
            return False  # a fresh memory socket for every request

    class Pool(urllib3.HTTPConnectionPool):
        ConnectionCls = Connection

    adapter = requests.adapters.HTTPAdapter()
    adapter.poolmanager.pool_classes_by_scheme = {**adapter.poolmanager.pool_classes_by_scheme, "http": Pool}
    return adapter


def _requests_memory(payload: bytes, content_type: str) -> Call:
    session = requests.Session()
    session.mount("http://", _MemoryAdapter(payload, content_type))
    return _requests_on(session)


def _requests_socket(payload: bytes, content_type: str) -> Call:
    session = requests.Session()
    session.mount("http://", _socket_adapter(payload, content_type))
    return _requests_on(session)


def _requests_on(session: requests.Session) -> Call:

    def call(url: str, stream: bool) -> object:
        response = session.post(url + "/v1/chat/completions", json=_body(stream), stream=stream)
        if not stream:
            return response.json()
        return sum(1 for _ in response.iter_lines())

    return call


class _MemoryTransport(asyncio.Transport):
    """An asyncio transport with nothing behind it: each complete request written to it is answered
    with ``answer``, fed to aiohttp's protocol as if it had arrived."""

    def __init__(self, protocol: ResponseHandler, answer: bytes) -> None:
        super().__init__()
        self._protocol = protocol
        self._answer = answer
        self._sent = bytearray()
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._sent += data
        while (head_end := self._sent.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in bytes(self._sent[:head_end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self._sent) < head_end + 4 + length:
                return
            del self._sent[: head_end + 4 + length]
            self._protocol.data_received(self._answer)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._protocol.connection_lost(None)

    def abort(self) -> None:
        self.close()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


class _MemoryConnector(aiohttp.BaseConnector):
    """aiohttp connections to nowhere: its own protocol on a ``_MemoryTransport``."""

    def __init__(self, payload: bytes, content_type: str) -> None:
        super().__init__()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n"
        self._memory_answer = head.encode() + payload

    async def _create_connection(self, req: Any, traces: Any, timeout: Any) -> ResponseHandler:
        protocol = ResponseHandler(loop=self._loop)
        protocol.connection_made(_MemoryTransport(protocol, self._memory_answer))
        return protocol


def _on_a_loop(send: Callable[[Any, str, bool], Any], open_client: Callable[[str], Any]) -> Call:
    """An async client as a ``Call``: its own event loop, the client opened on it (for the base URL) at
    the first call."""
    loop = asyncio.new_event_loop()
    opened: list[Any] = []
    _loops.append((loop, opened))

    async def once(url: str, stream: bool) -> object:
        if not opened:
            opened.append(open_client(url))
        return await send(opened[0], url, stream)

    return lambda url, stream: loop.run_until_complete(once(url, stream))


_loops: list[tuple[asyncio.AbstractEventLoop, list[Any]]] = []


def _close_loops() -> None:
    """Close what the async clients opened, each on its own loop, then the loops."""
    while _loops:
        loop, opened = _loops.pop()
        for client in opened:
            loop.run_until_complete(client.close())
        loop.close()


async def _aiohttp_send(session: aiohttp.ClientSession, url: str, stream: bool) -> object:
    async with session.post(url + "/v1/chat/completions", json=_body(stream)) as response:
        if not stream:
            return await response.json()
        return sum([1 async for _ in response.content])  # line by line


def _aiohttp_call() -> Call:
    return _on_a_loop(_aiohttp_send, lambda _url: aiohttp.ClientSession())


def _aiohttp_memory(payload: bytes, content_type: str) -> Call:
    connector = lambda: _MemoryConnector(payload, content_type)  # noqa: E731 (made on the client's loop)
    return _on_a_loop(_aiohttp_send, lambda _url: aiohttp.ClientSession(connector=connector()))


async def _sdk_send(client: openai.AsyncOpenAI, url: str, stream: bool) -> object:
    body = _body(stream)
    if not stream:
        return await client.chat.completions.create(model=body["model"], messages=body["messages"])
    chunks = await client.chat.completions.create(model=body["model"], messages=body["messages"], stream=True)
    return sum([1 async for _ in chunks])


def _sdk_on(http_client: Callable[[], Any]) -> Callable[[str], openai.AsyncOpenAI]:
    def open_client(url: str) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=url + "/v1", api_key="sk-bench", max_retries=0, http_client=http_client())

    return open_client


def _sdk_call() -> Call:
    return _on_a_loop(_sdk_send, _sdk_on(openai.DefaultAioHttpClient))


def _sdk_memory(payload: bytes, content_type: str) -> Call:
    def http_client() -> Any:
        def session() -> aiohttp.ClientSession:
            return aiohttp.ClientSession(connector=_MemoryConnector(payload, content_type))

        return openai.DefaultAioHttpClient(transport=AiohttpTransport(client=session))

    return _on_a_loop(_sdk_send, _sdk_on(http_client))


CLIENTS: dict[str, Client] = {
    "httpx": Client(_httpx_call, _httpx_memory),
    "requests": Client(_requests_call, _requests_memory, _requests_socket),
    "aiohttp": Client(_aiohttp_call, _aiohttp_memory),
    "openai+aiohttp": Client(_sdk_call, _sdk_memory),
}


def _per_call(call: Call, url: str, stream: bool, n: int, rounds: int) -> float:
    call(url, stream)  # warm
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            call(url, stream)
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def bench(name: str, client: Client, calls: int, root: Path) -> list[dict[str, Any]]:
    rows = []
    for stream in (False, True):
        n = calls if not stream else max(5, calls // 10)
        tape = root / f"{name}-{'stream' if stream else 'whole'}.jsonl"
        with fake_provider() as fp:
            raw = requests.post(fp.url + "/v1/chat/completions", json=_body(stream))
            payload, content_type = raw.content, raw.headers["content-type"]
            call = client.call()
            live = _per_call(call, fp.url, stream, n, 3)
            with record(tape), agent_run("bench"):
                for _ in range(n * 4 + 1):
                    call(fp.url, stream)
            url = fp.url
        memory = client.memory(payload, content_type)
        in_memory = _per_call(memory, url, stream, n, 5)
        on_socket = None
        if client.socket is not None:
            sock = client.socket(payload, content_type)
            on_socket = _per_call(sock, url, stream, n, 5)
        replayed = client.call()
        with replay(tape, allow_unused=True):
            with_spans = _per_call(replayed, url, stream, n, 3)
        with replay(tape, spans=False, allow_unused=True):
            without = _per_call(replayed, url, stream, n, 3)
        rows.append(
            {
                "client": name,
                "case": "stream" if stream else "whole",
                "response_bytes": len(payload),
                "memory_us": round(in_memory * 1e6, 1),
                "live_loopback_us": round(live * 1e6, 1),
                "replay_us": round(with_spans * 1e6, 1),
                "replay_no_spans_us": round(without * 1e6, 1),
                "ratio": round(with_spans / in_memory, 2),
                "ratio_no_spans": round(without / in_memory, 2),
                "memory_socket_us": None if on_socket is None else round(on_socket * 1e6, 1),
                "ratio_to_memory_socket": None if on_socket is None else round(with_spans / on_socket, 2),
            }
        )
    return rows


def breakdown(calls: int, root: Path) -> dict[str, float]:
    """A replayed whole request with aiohttp alone, in parts, CPU µs each (fastest of 5 × ``calls``): the
    aiohttp capture point's own translation (aiohttp's request → ``Request``; the recorded result →
    ``ClientResponse``, read with ``json()``) against the client-neutral exchange (``intercept`` and
    the replay session's decision), with replay spans on and off."""
    from otel_agent_replay.integrations._exchange import intercept
    from otel_agent_replay.integrations.clients import _aiohttp as capture

    tape = root / "aiohttp-breakdown.jsonl"
    with fake_provider() as fp:
        call = _aiohttp_call()
        with record(tape), agent_run("bench"):
            for _ in range(calls + 1):
                call(fp.url, False)
        url = fp.url

    class Taken(Exception):
        pass

    async def go() -> dict[str, float]:
        taken: list[Any] = []

        async def take(request: Any, handler: Any) -> Any:
            taken.append(request)
            raise Taken

        async with aiohttp.ClientSession(middlewares=(take,)) as session:
            with contextlib.suppress(Taken):
                await session.post(url + "/v1/chat/completions", json=_body(False))
        request, body = taken[0], await capture._request_body(taken[0])
        out: dict[str, list[float]] = {}

        async def timed(name: str, step: Callable[[], Any]) -> None:
            start = time.process_time()
            for _ in range(calls):
                await step()
            out.setdefault(name, []).append((time.process_time() - start) / calls * 1e6)

        async def decide() -> object:
            exchange = intercept(capture._request(request, body))
            assert exchange is not None
            return await exchange.answer_async(_never)

        async def translate() -> object:
            return capture._request(request, await capture._request_body(request))

        result: object = None
        for _ in range(5):
            for spans in (True, False):
                with replay(tape, spans=spans, allow_unused=True):
                    result = await decide()
                    await timed(f"exchange, spans {'on' if spans else 'off'}", decide)

            async def respond(result: object = result) -> object:
                return await capture.build_response(result, request).json()

            await timed("aiohttp request → Request", translate)
            await timed("result → ClientResponse, json()", respond)
        return {name: round(min(values), 1) for name, values in out.items()}

    return asyncio.run(go())


async def _never() -> dict[str, Any]:
    raise AssertionError("a hit never sends")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", nargs="*", default=list(CLIENTS), choices=list(CLIENTS))
    parser.add_argument("--breakdown", action="store_true", help="time the parts of a replayed aiohttp request")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-http-replay-"))
    rows = [row for name in args.clients for row in bench(name, CLIENTS[name], args.calls, root)]
    _close_loops()
    print(json.dumps(rows, indent=2))
    if args.breakdown:
        print("a replayed aiohttp request, CPU µs:", json.dumps(breakdown(args.calls, root), ensure_ascii=False))
        _close_loops()


if __name__ == "__main__":
    main()
