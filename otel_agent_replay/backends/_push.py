"""``push``: send a tape's spans to an OTLP endpoint as they were recorded.

Trace ids, span ids, parents, timestamps, attributes, events, links, status, resource and scope
go as the tape has them, so a run recorded offline shows up in Jaeger (or any OTLP backend) as
if it had been exported live. The file is first read the way ``load_tape`` reads it (same
formats, same strict checks and ``file:line`` errors); then its OTLP JSON is turned into OTLP
protobuf (``otlp_json``; Jaeger JSON through ``jaeger_otlp``), redacted as ``pull`` redacts what it
fetches (``redact_traces``: a tape another tool wrote may hold secrets), and sent in batches over
``http/protobuf`` or ``grpc``. Content attributes follow the GenAI switch, as for live export.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, TracesData

from otel_agent_replay.capture import DEFAULT_REDACTOR, Redactor
from otel_agent_replay.core import ConfigurationError, EndpointError, OtlpWarning, TapeFormatError
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import DECODE_ERRORS, decode_problem, iter_spans, otlp_from_jaeger

from ._http import parse_headers, request
from ._jaeger_answer import redact_traces
from ._otlp_config import PROTOCOLS, content_capture_enabled, traces_url
from ._otlp_json import strip_attributes, traces_data

__all__ = ["PushResult", "push", "tape_messages"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class PushResult:
    """What ``push`` sent."""

    endpoint: str
    protocol: str
    spans: int
    requests: int
    rejected: int = 0
    """Spans the endpoint said it rejected (OTLP partial success)."""
    content_stripped: int = 0
    """Spans sent without their content attributes (the content switch was off)."""
    messages: tuple[str, ...] = ()
    """What the endpoint said about rejected spans."""
    redacted: int = 0
    """Values redaction changed on the way out (a tape another tool wrote may hold secrets)."""
    unconfirmed: int = 0
    """Spans sent whose answer could not be read, so whether the endpoint rejected some is not known (the
    reasons are in ``messages``; an ``OtlpWarning`` says so too)."""


def push(
    path: str | os.PathLike[str],
    endpoint: str,
    *,
    protocol: str = "http/protobuf",
    headers: Mapping[str, str] | None = None,
    content: bool | None = None,
    timeout: float = 10.0,
    batch_spans: int = 512,
    redactor: Redactor = DEFAULT_REDACTOR,
) -> PushResult:
    """Send every span of the trace file at ``path`` to the OTLP endpoint ``endpoint``.

    ``endpoint``: for ``http/protobuf`` a base URL (``/v1/traces`` is added when it has no path)
    or the full traces URL; for ``grpc`` ``http://host:4317`` (``https://`` for TLS).
    ``headers`` go with every request (``OTEL_EXPORTER_OTLP_HEADERS`` is used under them);
    ``content`` sends arguments, results and messages (None: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
    Every value goes through ``redactor`` first (``redact_traces``, as ``pull`` and capture redact).
    Raises ``TapeNotFoundError`` / ``TapeFormatError`` for the file, ``ConfigurationError`` for the
    options, ``EndpointError`` when the endpoint cannot be reached or refuses the spans.
    """
    if protocol not in PROTOCOLS:
        raise ConfigurationError(f"protocol {protocol!r} is not supported; use 'http/protobuf' or 'grpc'")
    if batch_spans < 1:
        raise ConfigurationError(f"batch_spans={batch_spans}: give 1 or more")
    url = traces_url(endpoint, protocol)
    sent_headers = {**_env_headers(), **(headers or {})}
    keep_content = content_capture_enabled() if content is None else content
    source = os.fspath(path)
    expected = sum(1 for _ in iter_spans(source))  # the loader's checks and errors, before anything is sent
    sender: _HttpSender | _GrpcSender
    if protocol == "http/protobuf":
        sender = _HttpSender(url, sent_headers, timeout)
    else:
        sender = _GrpcSender(url, sent_headers, timeout)
    batch = _Batch()
    tally = _Tally()
    try:
        for line, doc in _documents(source):
            if not keep_content:
                doc, touched = strip_attributes(doc, A.CONTENT_ATTRIBUTES)
                tally.stripped += touched
            message = _message(doc, source, line)
            tally.redacted += redact_traces(message, redactor)  # a tape another tool wrote may hold secrets
            batch.add(message)
            if batch.spans >= batch_spans:
                tally.sent(batch.spans, sender.send(batch.request()))
                batch = _Batch()
        if batch.spans:
            tally.sent(batch.spans, sender.send(batch.request()))
    finally:
        sender.close()
    if tally.spans != expected:  # pragma: no cover - the reader and the loader disagree: a bug to report
        raise TapeFormatError(f"read {expected} span(s) but sent {tally.spans}; please report this", path=source)
    if tally.unconfirmed:
        warnings.warn(
            f"push: {tally.unconfirmed} of {tally.spans} span(s) sent to {url} are not confirmed: "
            f"{'; '.join(tally.unreadable)}. The endpoint may have rejected some of them; check its logs",
            OtlpWarning,
            stacklevel=2,
        )
    return PushResult(
        url,
        protocol,
        tally.spans,
        tally.requests,
        tally.rejected,
        tally.stripped,
        tuple(tally.messages),
        tally.redacted,
        tally.unconfirmed,
    )


def _message(doc: dict[str, Any], source: str, line: int) -> TracesData:
    try:
        return traces_data(doc)
    except DECODE_ERRORS as exc:
        problem = decode_problem(exc, "fix the file or export it again")
        raise TapeFormatError(problem, path=source, line=line) from None


def tape_messages(path: str | os.PathLike[str]) -> Iterator[tuple[int, TracesData]]:
    """Each ``TracesData`` of a trace file in any format the loader reads, with its line, as ``push``
    sends it (the file checked by the loader first: its errors, with ``file:line``)."""
    source = os.fspath(path)
    for _ in iter_spans(source):
        pass
    for line, doc in _documents(source):
        yield line, _message(doc, source, line)


class _Tally:
    """Counts of what was sent."""

    def __init__(self) -> None:
        self.spans = self.requests = self.rejected = self.stripped = self.redacted = self.unconfirmed = 0
        self.unreadable: list[str] = []
        self.messages: list[str] = []

    def sent(self, spans: int, answer: ExportTraceServiceResponse | str) -> None:
        """One request's answer: the endpoint's, or why it could not be read (its spans are then unconfirmed)."""
        self.spans += spans
        self.requests += 1
        if isinstance(answer, str):
            self.unconfirmed += spans
            self.unreadable.append(answer)
            self.messages.append(f"{spans} span(s) unconfirmed: {answer}")
            return
        self.rejected += answer.partial_success.rejected_spans
        if answer.partial_success.error_message:
            self.messages.append(answer.partial_success.error_message)


def _env_headers() -> dict[str, str]:
    from urllib.parse import unquote

    text = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    items = [item for item in text.split(",") if item.strip()]
    return {k: unquote(v) for k, v in parse_headers(items, source="OTEL_EXPORTER_OTLP_HEADERS").items()}


class _Batch:
    """Spans gathered into one request, grouped by their resource and scope."""

    def __init__(self) -> None:
        self.spans = 0
        self._resources: dict[bytes, ResourceSpans] = {}
        self._scopes: dict[tuple[bytes, bytes], Any] = {}

    def add(self, message: TracesData) -> None:
        for rs in message.resource_spans:
            rkey = rs.resource.SerializeToString(deterministic=True) + b"\x00" + rs.schema_url.encode()
            target = self._resources.get(rkey)
            if target is None:
                target = self._resources[rkey] = ResourceSpans(resource=rs.resource, schema_url=rs.schema_url)
            for ss in rs.scope_spans:
                skey = (rkey, ss.scope.SerializeToString(deterministic=True) + b"\x00" + ss.schema_url.encode())
                scope = self._scopes.get(skey)
                if scope is None:
                    scope = self._scopes[skey] = target.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url)
                scope.spans.extend(ss.spans)
                self.spans += len(ss.spans)

    def request(self) -> ExportTraceServiceRequest:
        return ExportTraceServiceRequest(resource_spans=list(self._resources.values()))


def _documents(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each OTLP JSON ``TracesData`` object of a trace file (already checked by the loader), with its line."""
    with open(path, "rb") as f:
        first = True
        for number, raw in enumerate(f, start=1):
            if first and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if not raw.strip():
                continue
            try:
                parsed = orjson.loads(raw)
            except orjson.JSONDecodeError:
                if first:  # not JSON Lines: one document over many lines
                    f.seek(0)
                    data = f.read()
                    yield from _objects(orjson.loads(data[len(_BOM) :] if data.startswith(_BOM) else data), number)
                    return
                if not raw.endswith(b"\n"):  # an unterminated last line (a torn write): the loader warned
                    return
                raise
            first = False
            yield from _objects(parsed, number)


def _objects(data: Any, line: int) -> Iterator[tuple[int, dict[str, Any]]]:
    if "resourceSpans" in data:
        yield line, data
    elif type(data.get("result")) is dict:  # Jaeger api/v3
        yield line, data["result"]
    elif "data" in data:  # Jaeger JSON
        for trace in data["data"] or ():
            yield line, otlp_from_jaeger(trace)
    else:  # one Jaeger trace
        yield line, otlp_from_jaeger(data)


class _HttpSender:
    def __init__(self, url: str, headers: Mapping[str, str], timeout: float) -> None:
        self.url = url
        self.headers = {**headers, "Content-Type": "application/x-protobuf"}
        self.timeout = timeout

    def send(self, req: ExportTraceServiceRequest) -> ExportTraceServiceResponse | str:
        """The endpoint's answer, or why it cannot be read (the spans then count as unconfirmed)."""
        got = request(
            "POST", self.url, body=req.SerializeToString(), headers=self.headers, timeout=self.timeout, what="push"
        )
        if not 200 <= got.status < 300:
            raise EndpointError(
                f"push: {self.url} answered HTTP {got.status}: {got.excerpt() or '(no body)'}; check the URL "
                f"(an OTLP/HTTP traces endpoint, usually http://host:4318/v1/traces) and the --header values"
            )
        answer = ExportTraceServiceResponse()
        if not got.body:
            return answer  # an empty answer is a full success
        kind = got.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            if kind == "application/x-protobuf":
                answer.ParseFromString(got.body)
            elif kind == "application/json":
                from google.protobuf.json_format import Parse

                Parse(got.body.decode("utf-8"), answer, ignore_unknown_fields=True)
            else:
                return f"HTTP {got.status} answered with {kind or 'no content type'}, not an OTLP answer"
        except Exception as exc:  # an answer we cannot read is not a failure of the push; it is said and counted
            return f"HTTP {got.status} answered with a {kind} body that is not an OTLP answer ({type(exc).__name__})"
        return answer

    def close(self) -> None:
        pass


class _GrpcSender:
    def __init__(self, url: str, headers: Mapping[str, str], timeout: float) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

        self.url = url
        target = url.split("://", 1)[-1].rstrip("/")
        if url.startswith("https://"):
            self.channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
        else:
            self.channel = grpc.insecure_channel(target)
        self.stub = TraceServiceStub(self.channel)  # type: ignore[no-untyped-call]  # generated without stubs
        self.metadata = [(key.lower(), value) for key, value in headers.items()]
        self.timeout = timeout

    def send(self, req: ExportTraceServiceRequest) -> ExportTraceServiceResponse:
        import grpc

        problem = ""
        for attempt in range(3):
            try:
                answer: ExportTraceServiceResponse = self.stub.Export(req, timeout=self.timeout, metadata=self.metadata)
                return answer
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                problem = f"{code.name if code else 'error'}: {exc.details() if hasattr(exc, 'details') else exc}"
                if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED) or attempt == 2:
                    break
                time.sleep(0.5 * 2**attempt)
        raise EndpointError(
            f"push: gRPC export to {self.url} failed: {problem}; check that an OTLP/gRPC receiver listens there "
            f"(usually http://host:4317) and the --header values"
        )

    def close(self) -> None:
        self.channel.close()
