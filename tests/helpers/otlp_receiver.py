"""Real OTLP receivers on 127.0.0.1 for the tests: HTTP (protobuf) and gRPC, plus a closed port."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from helpers.loopback import serve_on_loopback


@dataclass
class Received:
    """What a receiver got: the requests, their paths and headers."""

    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    answered: threading.Event = field(default_factory=threading.Event)
    """Set once the receiver has answered a request (see ``http_receiver(hold=...)``)."""

    def spans(self) -> list[Span]:
        """Every span of every request, in arrival order."""
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def by_id(self) -> dict[str, Span]:
        """Spans by hex span id."""
        return {s.span_id.hex(): s for s in self.spans()}

    def resource_values(self, key: str) -> set[str]:
        """The string values of one resource attribute over all requests."""
        return {
            kv.value.string_value
            for r in self.requests
            for rs in r.resource_spans
            for kv in rs.resource.attributes
            if kv.key == key
        }


def value_of(value: AnyValue) -> Any:
    """A protobuf AnyValue as a Python value."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in value.kvlist_value.values}
    return None if kind is None else getattr(value, kind)


def attrs_of(span: Span) -> dict[str, Any]:
    """A protobuf span's attributes as a dict."""
    return {kv.key: value_of(kv.value) for kv in span.attributes}


@contextmanager
def http_receiver(
    delay: float = 0.0,
    status: int = 200,
    hold: threading.Event | None = None,
    answer: bytes | None = None,
    content_type: str = "application/x-protobuf",
) -> Iterator[tuple[str, Received]]:
    """An OTLP/HTTP receiver on 127.0.0.1; yields its base URL and what it received.

    ``delay`` makes each answer wait that many seconds (a slow backend); ``hold`` makes each answer wait
    until the event is set (at most a minute), so a test can tell what happened before the backend
    answered by ``Received.answered``, not by the clock; ``status`` is the HTTP status it answers with;
    ``answer`` and ``content_type`` the body it answers with (default: an empty ``ExportTraceServiceResponse``).
    """
    got = Received()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if status == 200:
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                got.requests.append(request)
            got.paths.append(self.path)
            got.headers.append({k.lower(): v for k, v in self.headers.items()})
            if delay:
                time.sleep(delay)
            if hold is not None:
                hold.wait(60)
            payload = ExportTraceServiceResponse().SerializeToString() if status == 200 else b"no thanks"
            if answer is not None:
                payload = answer
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up waiting
            got.answered.set()

        def log_message(self, *args: object) -> None:
            pass

    with serve_on_loopback(Handler) as url:
        yield url, got


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, got: Received) -> None:
        self.got = got

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        self.got.requests.append(request)
        self.got.headers.append({k: v for k, v in context.invocation_metadata()})
        return ExportTraceServiceResponse()


@contextmanager
def grpc_receiver() -> Iterator[tuple[str, Received]]:
    """An OTLP/gRPC receiver on 127.0.0.1; yields its URL (``http://127.0.0.1:PORT``) and what it received."""
    got = Received()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Servicer(got), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", got
    finally:
        server.stop(grace=None)


def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
