"""``pull``: fetch traces from Jaeger's query API and write a tape that replay accepts.

By trace id (``/api/v3/traces/{id}``, which answers OTLP in protobuf JSON with base64 ids, or the
classic ``/api/traces/{id}``) or by service and time range (``/api/v3/traces?query.service_name=…``
or ``/api/traces?service=…``). ``api="auto"`` asks api/v3 first and falls back to the classic API
when the server has no api/v3 (an older Jaeger). Every span is written as one line of our tape
format (OTLP JSON, hex ids), once, and redacted on the way in (``jaeger_answer``): a string
attribute holding JSON is redacted as data, any other string by the value patterns. The tape is
written beside its final path and moved there only once it loads.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_agent_replay.capture import DEFAULT_REDACTOR, Redactor
from otel_agent_replay.core import ConfigurationError, EndpointError
from otel_agent_replay.tape import Tape, load_tape

from ._http import Response, request
from ._jaeger_answer import classic_messages, redact_traces, v3_messages
from ._otlp_json import span_lines

__all__ = ["APIS", "PullResult", "parse_duration", "parse_time", "pull"]

APIS = ("auto", "v3", "classic")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_HEX_ID = re.compile(r"[0-9a-fA-F]{1,32}")


@dataclass(frozen=True)
class PullResult:
    """What ``pull`` wrote."""

    path: Path
    api: str
    traces: int
    spans: int
    runs: int
    steps: int
    redacted: int
    """Attribute values (and status messages) that redaction changed."""
    urls: tuple[str, ...]


def parse_duration(text: str) -> _dt.timedelta:
    """``90s``, ``15m``, ``2h``, ``1d``, ``500ms`` (or ``1h30m``) as a timedelta; ``ConfigurationError`` else."""
    compact = text.strip().lower().replace(" ", "")
    pos, total = 0, 0.0
    for match in _DURATION.finditer(compact):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not compact or pos != len(compact):
        raise ConfigurationError(f"{text!r} is not a duration; write it like 90s, 15m, 2h, 1d or 1h30m")
    return _dt.timedelta(seconds=total)


def parse_time(text: str, now: _dt.datetime | None = None) -> _dt.datetime:
    """An ISO-8601 time (UTC when it names no zone), or a duration ago (``2h``); ``ConfigurationError`` else."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    value = text.strip()
    try:
        when = _dt.datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        try:
            return now - parse_duration(value)
        except ConfigurationError:
            raise ConfigurationError(
                f"{text!r} is neither a time (2026-11-30T09:00:00Z) nor a duration ago (2h, 30m)"
            ) from None
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)


def pull(
    jaeger: str,
    out: str | os.PathLike[str],
    *,
    trace_ids: Sequence[str] = (),
    service: str | None = None,
    since: _dt.datetime | None = None,
    until: _dt.datetime | None = None,
    limit: int = 20,
    api: str = "auto",
    redactor: Redactor = DEFAULT_REDACTOR,
    timeout: float = 10.0,
) -> PullResult:
    """Fetch traces from the Jaeger query service at ``jaeger`` (``http://localhost:16686``) into the tape ``out``.

    Give ``trace_ids``, or a ``service`` with a time range (``since`` defaults to an hour before
    ``until``, which defaults to now; at most ``limit`` traces). ``out`` is replaced.
    Raises ``ConfigurationError`` for the options, ``EndpointError`` when Jaeger cannot be
    reached, does not know a trace, or answers something that is not a trace.
    """
    base = _base_url(jaeger)
    if api not in APIS:
        raise ConfigurationError(f"api={api!r}: use one of {', '.join(APIS)}")
    ids = [_trace_id(t) for t in trace_ids]
    if bool(ids) == bool(service):
        raise ConfigurationError("pull needs either trace ids or a service name (with a time range), not both")
    if limit < 1:
        raise ConfigurationError(f"limit={limit}: give 1 or more")
    until = until or _dt.datetime.now(_dt.timezone.utc)
    since = since or until - _dt.timedelta(hours=1)
    if since >= until:
        raise ConfigurationError(
            f"the time range is empty: since {since.isoformat()} is not before {until.isoformat()}"
        )
    fetcher = _Fetcher(base, api, timeout)
    messages = list(fetcher.traces(ids) if ids else fetcher.search(str(service), since, until, limit))
    if not any(ss.spans for m in messages for rs in m.resource_spans for ss in rs.scope_spans):
        raise EndpointError(
            f"pull: Jaeger at {base} has no spans for {', '.join(ids) or f'service {service!r}'} "
            f"between {since.isoformat()} and {until.isoformat()}; check the name, or widen --since/--lookback"
        )
    redacted = sum(redact_traces(message, redactor) for message in messages)
    target = Path(out)
    spans, traces, tape = _write(messages, target)
    steps = sum(len(run.steps) for run in tape.runs)
    return PullResult(target, fetcher.used, traces, spans, len(tape.runs), steps, redacted, tuple(fetcher.urls))


def _base_url(jaeger: str) -> str:
    text = jaeger.strip().rstrip("/")
    if not re.match(r"https?://[^/\s]+", text):
        raise ConfigurationError(
            f"--jaeger {jaeger!r} is not a URL; give the query service, like http://localhost:16686"
        )
    return text


def _trace_id(text: str) -> str:
    value = text.strip()
    if not _HEX_ID.fullmatch(value):
        raise ConfigurationError(f"trace id {text!r} is not hex (up to 32 digits, as Jaeger shows them)")
    return value.lower().rjust(32, "0")


class _Fetcher:
    """Asks one Jaeger; remembers which API answered and the URLs it asked."""

    def __init__(self, base: str, api: str, timeout: float) -> None:
        self.base = base
        self.api = api
        self.used = api
        self.timeout = timeout
        self.urls: list[str] = []

    def _get(self, path: str) -> Response:
        url = self.base + path
        self.urls.append(url)
        return request("GET", url, headers={"Accept": "application/json"}, timeout=self.timeout, what="pull")

    def traces(self, ids: list[str]) -> Iterator[TracesData]:
        for trace_id in ids:
            if self.api in ("auto", "v3"):
                got = self._get(f"/api/v3/traces/{quote(trace_id)}")
                if self.api == "v3" or _is_v3(got):
                    self.used = "v3"
                    yield from v3_messages(_expect(got, f"trace {trace_id}"))
                    continue
            self.used = "classic"
            yield from classic_messages(_expect(self._get(f"/api/traces/{quote(trace_id)}"), f"trace {trace_id}"))

    def search(self, service: str, since: _dt.datetime, until: _dt.datetime, limit: int) -> Iterator[TracesData]:
        what = f"traces of service {service!r} between {since.isoformat()} and {until.isoformat()}"
        if self.api in ("auto", "v3"):
            query = urlencode(
                {
                    "query.service_name": service,
                    "query.start_time_min": _rfc3339(since),
                    "query.start_time_max": _rfc3339(until),
                    "query.search_depth": limit,
                }
            )
            got = self._get(f"/api/v3/traces?{query}")
            if self.api == "v3" or _is_v3(got):
                self.used = "v3"
                if got.status == 404 and _grpc_code(got) == 5:  # NOT_FOUND: no trace in the range
                    return
                yield from v3_messages(_expect(got, what))
                return
        self.used = "classic"
        query = urlencode({"service": service, "start": _micros(since), "end": _micros(until), "limit": limit})
        yield from classic_messages(_expect(self._get(f"/api/traces?{query}"), what))


def _is_v3(got: Response) -> bool:
    """Whether an answer came from api/v3 (a trace, or a gRPC-gateway error): else the server has none."""
    return 200 <= got.status < 300 or _grpc_code(got) is not None


def _grpc_code(got: Response) -> int | None:
    try:
        error = orjson.loads(got.body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    code = error.get("grpcCode") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None


def _expect(got: Response, what: str) -> Response:
    if 200 <= got.status < 300:
        return got
    if got.status == 404:
        raise EndpointError(
            f"pull: Jaeger has no {what} ({got.url} answered 404: {got.excerpt()}); check the id, "
            f"the service name and the time range, and that this is the Jaeger the traces went to"
        )
    raise EndpointError(
        f"pull: {got.url} answered HTTP {got.status}: {got.excerpt() or '(no body)'}; check --jaeger "
        f"(the query service, usually port 16686)"
    )


def _write(messages: list[TracesData], target: Path) -> tuple[int, int, Tape]:
    """Write each span once, ordered by trace then start; the number of spans and traces, the loaded tape."""
    seen: set[tuple[bytes, bytes]] = set()
    lines: list[tuple[int, int, bytes]] = []
    trace_order: dict[bytes, int] = {}
    for message in messages:
        for span, line in span_lines(message):
            key = (span.trace_id, span.span_id)
            if key in seen:
                continue
            seen.add(key)
            order = trace_order.setdefault(span.trace_id, len(trace_order))
            lines.append((order, span.start_time_unix_nano, line))
    lines.sort(key=lambda item: (item[0], item[1]))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".pulling", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.writelines(line for _, _, line in lines)
        tape = load_tape(temp)  # what we wrote must load before it replaces anything
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return len(lines), len(trace_order), tape


def _rfc3339(when: _dt.datetime) -> str:
    utc = when.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}000Z"


def _micros(when: _dt.datetime) -> int:
    return int(when.timestamp() * 1_000_000)
