"""A Jaeger query service stand-in on 127.0.0.1 that serves a tape's spans as Jaeger's JSON.

It answers what Jaeger's query API answers: ``/api/v3/traces/{id}`` and ``/api/v3/traces?query.…``
with ``{"result": TracesData}`` (protobuf JSON, base64 ids), a gRPC-gateway error for what it does
not have; the classic ``/api/traces/{id}`` and ``/api/traces?service=…`` with ``{"data": [...]}``.
With ``v3=False`` it is an older Jaeger: api/v3 paths answer Go's plain ``404 page not found``.
"""

from __future__ import annotations

import datetime as _dt
import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from helpers.jaeger_json import classic_answer, v3_answer
from helpers.loopback import serve_on_loopback
from otel_agent_replay.core import attributes as A

_NOT_FOUND = {"error": {"grpcCode": 5, "httpCode": 404, "message": "trace not found", "httpStatus": "Not Found"}}


@dataclass
class FakeJaeger:
    """The spans it serves (OTLP JSON tape lines) and the requests it got."""

    docs: list[dict[str, Any]]
    v3: bool = True
    short_ids: bool = False
    requests: list[str] = field(default_factory=list)
    queries: list[dict[str, list[str]]] = field(default_factory=list)

    def _of_trace(self, trace_id: str) -> list[dict[str, Any]]:
        out = []
        for doc in self.docs:
            for rs in doc["resourceSpans"]:
                spans = [s for ss in rs["scopeSpans"] for s in ss["spans"] if s["traceId"] == trace_id.rjust(32, "0")]
                if spans:
                    out.append(doc)
                    break
        return out

    def _search(self, service: str, start_ns: int, end_ns: int, limit: int) -> list[dict[str, Any]]:
        traces: dict[str, list[dict[str, Any]]] = {}
        for doc in self.docs:
            for rs in doc["resourceSpans"]:
                names = {
                    kv["value"].get("stringValue")
                    for kv in rs.get("resource", {}).get("attributes", [])
                    if kv["key"] == A.SERVICE_NAME
                }
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        if service in names and start_ns <= int(span["startTimeUnixNano"]) < end_ns:
                            traces.setdefault(span["traceId"], [])
        chosen = list(traces)[:limit]
        return [doc for trace_id in chosen for doc in self._of_trace(trace_id)]

    def answer(self, path: str) -> tuple[int, bytes]:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        self.requests.append(parts.path)
        self.queries.append(query)
        if parts.path.startswith("/api/v3/"):
            if not self.v3:
                return 404, b"404 page not found\n"
            if parts.path.startswith("/api/v3/traces/"):
                docs = self._of_trace(parts.path.rsplit("/", 1)[1])
            else:
                start = _rfc3339_ns(query["query.start_time_min"][0])
                end = _rfc3339_ns(query["query.start_time_max"][0])
                docs = self._search(query["query.service_name"][0], start, end, int(query["query.search_depth"][0]))
            return (200, orjson.dumps(v3_answer(docs))) if docs else (404, orjson.dumps(_NOT_FOUND))
        if parts.path.startswith("/api/traces/"):
            docs = self._of_trace(parts.path.rsplit("/", 1)[1])
            if not docs:
                return 404, orjson.dumps({"data": None, "errors": [{"code": 404, "msg": "trace not found"}]})
            return 200, orjson.dumps(classic_answer(docs, short_ids=self.short_ids))
        if parts.path == "/api/traces":
            start, end = int(query["start"][0]) * 1000, int(query["end"][0]) * 1000
            docs = self._search(query["service"][0], start, end, int(query["limit"][0]))
            return 200, orjson.dumps(classic_answer(docs, short_ids=self.short_ids))
        return 404, b"404 page not found\n"


def _rfc3339_ns(text: str) -> int:
    """Jaeger's RFC-3339 with nanoseconds: ``2026-11-30T09:00:00.123456789Z``."""
    assert text.endswith("Z"), text
    seconds, _, fraction = text[:-1].partition(".")
    when = _dt.datetime.fromisoformat(seconds).replace(tzinfo=_dt.timezone.utc)
    return int(when.timestamp()) * 1_000_000_000 + int(fraction.ljust(9, "0")[:9] or 0)


@contextmanager
def jaeger_server(fake: FakeJaeger) -> Iterator[str]:
    """Serve ``fake`` on 127.0.0.1; yields the base URL (``http://127.0.0.1:PORT``)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = fake.answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if body[:1] in b"{[" else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serve_on_loopback(Handler) as url:
        yield url
