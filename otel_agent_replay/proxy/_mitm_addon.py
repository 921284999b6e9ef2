"""The script ``mitmdump -s`` loads: each flow is handed to the decider of the process that started it.

This file runs inside mitmproxy's own interpreter (an environment of its own: see ``_server``), so it
imports mitmproxy and the standard library only, never ``otel_agent_replay``. It knows nothing of
tapes: for each request it asks the decider (a loopback HTTP server of the recording or replaying
process, named with a per-run token by the environment) what to do, and does it:

- ``answer``: the response is the decider's (a replay: from the tape, or a refusal); nothing is
  sent upstream (the connection strategy is lazy, so no upstream connection is ever opened);
- ``serve``: a paced stream from the tape: the request goes to the decider itself (loopback, with the
  run's token) instead of its host, and its answer is streamed on to the child as it comes;
- ``forward``: mitmproxy sends it upstream (only on that answer: a request the decider could not decide
  is answered 502, never forwarded); the response head, each chunk of a stream (as it passes to
  the client: ``response.stream``, nothing buffered) and the whole body are reported back, so the
  decider records the step.

A block's children each say who they are in the proxy variables' credentials (``http://ID:TOKEN@…``, the
run's token as the password): the relay reads them from the request or from the ``CONNECT`` of its
connection, removes the header, and names the child to the decider (``who``).

Requests to the proxy's own listeners (a client that honours the proxy variables calling a base URL
that points at a reverse listener) pass untouched: that listener reports them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import http.client as httpclient
import json
import os
from typing import Any

from mitmproxy import ctx  # type: ignore[import-not-found,unused-ignore]
from mitmproxy import http as mitmhttp

_DECIDER = os.environ.get("AGENT_REPLAY_PROXY_DECIDER", "")
_TOKEN = os.environ.get("AGENT_REPLAY_PROXY_TOKEN", "")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _ask(verb: str, payload: dict[str, Any]) -> dict[str, Any]:
    host, _, port = _DECIDER.rpartition(":")
    connection = httpclient.HTTPConnection(host, int(port), timeout=600)
    try:
        body = json.dumps(payload).encode()
        connection.request(
            "POST", f"/{verb}", body=body, headers={"content-type": "application/json", "x-agent-replay-token": _TOKEN}
        )
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"the decider answered {response.status}: {data[:500]!r}")
        answer: dict[str, Any] = json.loads(data or b"{}")
        return answer
    finally:
        connection.close()


def _who(headers: Any) -> str:
    """The child named by a ``Proxy-Authorization: Basic`` header with the run's token, else ``""``."""
    scheme, _, value = str(headers.get("proxy-authorization", "")).partition(" ")
    if scheme.lower() != "basic":
        return ""
    try:
        user, _, password = base64.b64decode(value.strip()).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return ""
    return user if _TOKEN and password == _TOKEN else ""


def _headers(headers: Any) -> list[list[str]]:
    return [[str(k), str(v)] for k, v in headers.items(multi=True)]


def _b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


class Relay:
    """Hands each flow to the decider."""

    def __init__(self) -> None:
        self.own: set[int] = set()
        self.stands_for: dict[int, str] = {}
        """A reverse listener's port → the upstream origin it stands for."""
        self.who: dict[str, str] = {}
        """A client connection → the child that opened it (from its ``CONNECT``'s credentials)."""

    async def running(self) -> None:
        proxyserver = ctx.master.addons.get("proxyserver")
        for _ in range(3000):
            servers = list(proxyserver.servers)
            if servers and all(server.listen_addrs for server in servers):
                break
            await asyncio.sleep(0.01)
        regular = 0
        reverse: dict[str, int] = {}
        for server in proxyserver.servers:
            port = int(server.listen_addrs[0][1])
            self.own.add(port)
            spec = server.mode.full_spec
            if spec.startswith("regular"):
                regular = port
            else:
                origin = spec[len("reverse:") : spec.rindex("@")].rstrip("/")
                reverse[origin] = port
                self.stands_for[port] = origin
        await asyncio.to_thread(_ask, "ready", {"regular": regular, "reverse": reverse, "pid": os.getpid()})

    def http_connect(self, flow: Any) -> None:
        who = _who(flow.request.headers)
        if who:
            self.who[flow.client_conn.id] = who

    def client_disconnected(self, client: Any) -> None:
        self.who.pop(client.id, None)

    def requestheaders(self, flow: Any) -> None:
        request = flow.request
        who = _who(request.headers) or self.who.get(flow.client_conn.id, "")
        request.headers.pop("proxy-authorization", None)
        flow.metadata["agent_replay_who"] = who
        if request.host in _LOOPBACK and request.port in self.own:
            # a client that honours the proxy variables, calling a base URL that points at one of our reverse
            # listeners: it means that listener's upstream (mitmproxy would not connect to itself)
            origin = self.stands_for.get(request.port)
            if origin is None:
                return
            request.url = origin + request.path
        flow.metadata["agent_replay"] = True
        request.headers["accept-encoding"] = "identity"  # a stream is recorded as it passes

    async def request(self, flow: Any) -> None:
        if not flow.metadata.get("agent_replay"):
            return
        request = flow.request
        payload = {
            "flow": flow.id,
            "method": request.method,
            "scheme": request.scheme,
            "host": request.host,
            "port": request.port,
            "path": request.path,
            "headers": _headers(request.headers),
            "body": _b64(request.get_content(strict=False)),
            "who": flow.metadata.get("agent_replay_who", ""),
        }
        try:
            answer = await asyncio.to_thread(_ask, "request", payload)
        except Exception as exc:  # never forward what was not decided: a replay must not leak it live
            ctx.log.error(f"agent-replay: the decider did not answer {request.method} {request.pretty_url}: {exc}")
            said = f"the recording proxy could not decide this request: {exc}".encode()
            flow.response = mitmhttp.Response.make(502, said, {"content-type": "text/plain; charset=utf-8"})
            flow.metadata["agent_replay"] = False
            return
        if answer.get("action") == "serve":
            request.scheme, request.host, request.port = "http", "127.0.0.1", int(answer["port"])
            request.path = str(answer["path"])
            request.headers["x-agent-replay-token"] = _TOKEN
            flow.metadata["agent_replay"] = False
            flow.metadata["agent_replay_served"] = True
            return
        if answer.get("action") == "answer":
            headers = [(k.encode(), v.encode()) for k, v in answer.get("headers", [])]
            flow.response = mitmhttp.Response.make(int(answer["status"]), base64.b64decode(answer["body"]), headers)
            flow.metadata["agent_replay"] = False  # answered: nothing more to report

    def responseheaders(self, flow: Any) -> None:
        if flow.metadata.get("agent_replay_served"):
            flow.response.stream = True  # each part as the decider sends it
            return
        if not flow.metadata.get("agent_replay"):
            return
        response = flow.response
        answer = _ask("head", {"flow": flow.id, "status": response.status_code, "headers": _headers(response.headers)})
        if not answer.get("stream"):
            return
        flow_id = flow.id

        def passing(data: bytes) -> bytes:
            _ask("chunk", {"flow": flow_id, "data": _b64(data)})  # an empty chunk is the stream's end
            return data

        flow.metadata["agent_replay_stream"] = True
        response.stream = passing

    async def response(self, flow: Any) -> None:
        if not flow.metadata.get("agent_replay"):
            return
        response = flow.response
        streamed = bool(flow.metadata.get("agent_replay_stream"))
        payload = {
            "flow": flow.id,
            "status": response.status_code,
            "headers": _headers(response.headers),
            "body": "" if streamed else _b64(response.get_content(strict=False)),
            "streamed": streamed,
        }
        await asyncio.to_thread(_ask, "response", payload)

    async def error(self, flow: Any) -> None:
        if not flow.metadata.get("agent_replay"):
            return
        message = flow.error.msg if flow.error is not None else "the connection failed"
        await asyncio.to_thread(_ask, "error", {"flow": flow.id, "message": message})


addons = [Relay()]
