"""The decider: what each request through the proxy is, decided by ``integrations``' own exchange.

mitmproxy (another process, see ``_server``) parses each request and, for HTTPS, ends the child's TLS
with a certificate of the run's CA; its relay (``_mitm_addon``) asks this process what to do. The
decider turns the request into the client-neutral ``Request`` and asks the same ``intercept`` an
in-process client asks, in a copy of the context of the block that started the proxy (its run, its
recording or replay), so a proxied request is the same step as an in-process one:

- recording: ``begin`` when the request goes upstream; ``sent`` when the response head is back; a
  framed stream (SSE, NDJSON, the AWS event stream) is fed to the step chunk by chunk as mitmproxy
  passes each chunk on to the child (nothing is buffered), anything else is ``finish``-ed whole;
- replaying: the tape's answer is the response (nothing goes upstream), or the divergence is refused
  with an HTTP error the child's client raises as its own (``refusal``). A recorded stream under
  ``pace="recorded"`` is served by this process itself (``/served/ID``, loopback, the run's token): the
  relay sends the request there instead, and passes the chunks on as they come, each at its recorded
  offset (``response_bytes``), so the child reads the stream as fast as it came when it was recorded;
- not ours (a passthrough host of the replay): mitmproxy forwards it untouched.

One flow's calls come one after the other and run in one ``contextvars.Context``, so the step's
context tokens are set and reset in the same context.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import dataclasses
import hmac
import html
import http.client
import http.server
import logging
import secrets
import ssl
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

import orjson
from opentelemetry import context as otel_context

from otel_agent_replay.core import AgentReplayError, SideEffectRefused
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import (
    SUPPRESS_HTTP_KEY,
    Exchange,
    Request,
    Stream,
    chunks,
    intercept,
    is_stream,
    response_bytes,
    response_result,
    result_headers,
)

_log = logging.getLogger(__name__)
_SERVED = "/served/"
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding"}
)


@dataclasses.dataclass
class ProcessFacts:
    """Who sends through the proxy: the command and, once it is started, its process id."""

    command: str = ""
    pid: int | None = None

    def attributes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.command:
            out[A.PROCESS_COMMAND] = self.command
        if self.pid is not None:
            out[A.PROCESS_PID] = self.pid
        return out


def refusal(exc: BaseException) -> tuple[int, bytes]:
    """The HTTP error a divergence is answered with: 403 for a refused side effect, else 400 (a miss,
    drift), statuses no SDK retries; a body both the OpenAI and the Anthropic SDKs read their message from."""
    kind = type(exc).__name__
    status = 403 if isinstance(exc, SideEffectRefused) else 400
    body = {"type": "error", "error": {"type": f"agent_replay.{kind}", "code": kind, "message": str(exc)}}
    return status, orjson.dumps(body)


def bad_gateway(exc: BaseException) -> tuple[int, Mapping[str, str], bytes]:
    """A recorded failure to reach the upstream (a refused connection, a name that did not resolve),
    answered as the child saw it when it was recorded: mitmproxy's 502, with the recorded message."""
    text = html.escape(str(exc) or type(exc).__name__)
    body = f"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><p>{text}</p></body></html>"
    return 502, {"content-type": "text/html", "x-agent-replay": type(exc).__name__}, body.encode()


@dataclasses.dataclass
class _Flow:
    """What this addon keeps on one mitmproxy flow."""

    context: contextvars.Context
    exchange: Exchange | None = None
    stream: Stream | None = None


class Decider:
    """The proxy's other half, in this process: a loopback HTTP server that mitmproxy's relay asks
    what each flow is (``_mitm_addon``), answering from the exchange of the block that started it.

    Every call carries the run's token (a local process that does not know it is refused). Each flow's
    calls come one after the other and run in one copy of the block's context.
    """

    def __init__(self, context: contextvars.Context, process: ProcessFacts, upstream_ca: str | None) -> None:
        self._context = context
        self._process = process
        self._upstream_ca = upstream_ca
        self._specs: dict[tuple[int, int], Any] = {}
        self.children: dict[str, ProcessFacts] = {}
        """A block's child (the name its proxy credentials carry) → its command and process id."""
        self._flows: dict[str, _Flow] = {}
        self._served: dict[str, dict[str, Any]] = {}
        """A paced stream from the tape, by the one-time name its ``/served/`` request asks for."""
        self._lock = threading.Lock()
        self.token = secrets.token_urlsafe(24)
        self.ready = threading.Event()
        self.ports: dict[str, Any] = {}
        """What the relay reported when it started: ``regular`` and ``reverse`` (origin → port) ports."""
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="agent-replay-proxy-decider", daemon=True
        )

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        # a thread of its own starts with an empty context: the decider's sockets are never the replay's
        self._thread.start()

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        with self._lock:
            flows, self._flows = list(self._flows.values()), {}
            self._served.clear()  # a paced answer never asked for (its child went away first)
        for state in flows:  # a stream still open when the command ended: its step ends with what arrived
            if state.stream is not None:
                state.context.run(state.stream.close)

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        decider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                if not hmac.compare_digest(self.headers.get("x-agent-replay-token", ""), decider.token):
                    self.send_response(403)
                    self.end_headers()
                    return
                if self.path.startswith(_SERVED):
                    self._serve()
                    return
                try:
                    answer = decider.handle(self.path.strip("/"), orjson.loads(data or b"{}"))
                except Exception:  # the relay must get an answer; the step's own errors are in the tape
                    _log.exception("the recording proxy could not decide a request")
                    self.send_response(500)
                    self.end_headers()
                    return
                body = orjson.dumps(answer)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_PATCH = do_DELETE = do_POST  # a served stream answers the child's own method

            def _serve(self) -> None:
                """A paced stream from the tape, part by part as each is due (the relay passes each on)."""
                self.close_connection = True
                with decider._lock:
                    result = decider._served.pop(self.path[len(_SERVED) :], None)
                if result is None:
                    self.send_error(404, "no such answer (each is served once)")
                    return
                reader = response_bytes(result, pace=True)
                with contextlib.suppress(OSError):  # the child stopped reading: the rest is not sent
                    while part := reader.read1(65536):
                        self.wfile.write(part)
                        self.wfile.flush()

        return Handler

    def handle(self, verb: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One call of the relay: ``ready``, ``request``, ``head``, ``chunk``, ``response`` or ``error``."""
        if verb == "ready":
            self.ports = payload
            self.ready.set()
            return {}
        flow_id = str(payload.get("flow"))
        if verb == "request":
            fresh = _Flow(self._context.copy())
            process = self.children.get(str(payload.get("who") or ""), self._process)
            outcome = fresh.context.run(self._decide, fresh, _request(payload), process)
            if fresh.exchange is not None:
                with self._lock:
                    self._flows[flow_id] = fresh
            if outcome is None:
                return {"action": "forward"}
            if isinstance(outcome, str):
                return {"action": "serve", "port": self._server.server_address[1], "path": _SERVED + outcome}
            status, headers, body = outcome
            kept = [[k, v] for k, v in headers.items() if k.lower() not in ("content-length", "transfer-encoding")]
            return {"action": "answer", "status": status, "headers": kept, "body": _b64(body)}
        with self._lock:
            state = self._flows.get(flow_id)
        if state is None or state.exchange is None:
            return {}
        exchange = state.exchange
        if verb == "head":
            headers = _header_map(payload.get("headers"))
            state.context.run(exchange.sent)
            state.stream = state.context.run(exchange.stream, int(payload["status"]), headers)
            return {"stream": state.stream is not None}
        if verb == "chunk":
            data = base64.b64decode(payload.get("data") or "")
            if state.stream is not None:
                if data:
                    state.stream.feed(data)
                else:
                    state.context.run(state.stream.close)
            return {}
        with self._lock:
            self._flows.pop(flow_id, None)
        if verb == "response":
            if state.stream is not None:
                state.context.run(state.stream.close)  # once: a stream closed at its end is not closed again
            else:
                headers = _header_map(payload.get("headers"))
                content = base64.b64decode(payload.get("body") or "")
                state.context.run(exchange.finish, int(payload["status"]), headers, content)
        elif verb == "error":
            if state.stream is not None:
                state.context.run(state.stream.close)
            else:
                state.context.run(
                    exchange.fail, ConnectionError(str(payload.get("message") or "the connection failed"))
                )
        return {}

    # --- the decision, in the block's context --------------------------------------------

    def _decide(
        self, state: _Flow, request: Request, process: ProcessFacts
    ) -> tuple[int, Mapping[str, str], bytes] | str | None:
        """None: forward it (recorded as it goes); a response; or the name of a paced stream to serve."""
        exchange = intercept(request)
        if exchange is None:
            return None
        exchange.spec = self._with_process(exchange.spec, process)
        if not exchange.replaying:
            exchange.begin()
            state.exchange = exchange
            return None
        try:
            result = exchange.answer(lambda: self._live(request))
        except AgentReplayError as exc:
            status, body = refusal(exc)
            return status, {"content-type": "application/json", "x-agent-replay": type(exc).__name__}, body
        except Exception as exc:  # a recorded failure (the upstream could not be reached), replayed
            return bad_gateway(exc)
        if exchange.pace and is_stream(result):
            name = secrets.token_urlsafe(16)
            with self._lock:
                self._served[name] = result
            return name
        return int(result["status"]), result_headers(result), b"".join(chunks(result))

    def _with_process(self, spec: Any, process: ProcessFacts) -> Any:
        """The route's spec with the process's ``agent_replay.process.*`` on each step's span."""
        found = self._specs.get((id(spec), id(process)))
        if found is not None and found[0] is spec:
            return found[1]
        inner = spec.call_attributes

        def attributes(args: Any) -> Mapping[str, Any]:
            out = dict(inner(args)) if inner is not None else {}
            out.update(process.attributes())
            return out

        wrapped = dataclasses.replace(spec, call_attributes=attributes)
        self._specs[(id(spec), id(process))] = (spec, wrapped)
        return wrapped

    def _live(self, request: Request) -> dict[str, Any]:
        """Send the request upstream for real (a read-only miss under ``new_episodes``, ``models="live"``,
        a fork going live): the replay decided it may, and records the result."""
        token = otel_context.attach(otel_context.set_value(SUPPRESS_HTTP_KEY, True))
        try:
            if request.scheme == "https":
                context = ssl.create_default_context(cafile=self._upstream_ca)
                connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                    request.host, request.port or 443, context=context, timeout=300
                )
            else:
                connection = http.client.HTTPConnection(request.host, request.port or 80, timeout=300)
            target = request.path + (f"?{request.query}" if request.query else "")
            headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
            headers["host"] = request.authority
            try:
                connection.request(request.method, target, body=request.body or None, headers=headers)
                response = connection.getresponse()
                content = response.read()
                return response_result(response.status, response.headers, content)
            finally:
                connection.close()
        finally:
            otel_context.detach(token)


def _header_map(pairs: Any) -> dict[str, str]:
    """The relay's header pairs as one lower-case mapping (repeated names joined, as HTTP allows)."""
    out: dict[str, str] = {}
    for name, value in pairs or ():
        low = str(name).lower()
        out[low] = f"{out[low]}, {value}" if low in out else str(value)
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _request(payload: dict[str, Any]) -> Request:
    """The relay's request as the client-neutral one (the upstream's host: mitmproxy's reverse mode has
    already put it in place of our listener's)."""
    parts = urllib.parse.urlsplit(str(payload.get("path") or "/"))
    port = payload.get("port")
    return Request(
        str(payload.get("method") or "GET").upper(),
        str(payload.get("scheme") or "http").lower(),
        str(payload.get("host") or "").lower(),
        int(port) if isinstance(port, int) else None,
        parts.path or "/",
        parts.query,
        _header_map(payload.get("headers")),
        base64.b64decode(payload.get("body") or ""),
    )
