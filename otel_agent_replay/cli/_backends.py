"""The backend commands: ``push`` a tape to an OTLP endpoint, ``pull`` traces from Jaeger into a tape.

Exit status of both: 0 done; 2 a usage, option or tape error (nothing was sent or written);
3 the endpoint could not be reached, refused the spans, or does not have the trace.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
from typing import Any

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.backends import (
    APIS,
    CAPTURE_CONTENT_ENV,
    OTLP_ENDPOINT_ENVS,
    PROTOCOLS,
    otlp_protocol,
    parse_duration,
    parse_headers,
    parse_time,
    pull,
    push,
)
from otel_agent_replay.core import EndpointError, StoreError
from otel_agent_replay.store import open_store

from ._output import dump_json

EXIT_ENDPOINT = 3
_EXIT_EPILOG = (
    "exit status: 0 done; 2 a usage, option or tape error (nothing was {verb}); 3 the endpoint could not be "
    "reached, refused the request, or does not have what was asked."
)


def _failed(err: Console, exc: EndpointError) -> int:
    err.print(f"[red]error:[/red] {escape(str(exc))}")
    return EXIT_ENDPOINT


def _cmd_push(args: argparse.Namespace, out: Console, err: Console) -> int:
    endpoint = args.endpoint or next((os.environ[n] for n in OTLP_ENDPOINT_ENVS if os.environ.get(n)), None)
    if not endpoint:
        err.print(
            "[red]error:[/red] push needs --endpoint URL (or OTEL_EXPORTER_OTLP_ENDPOINT), "
            "e.g. --endpoint http://localhost:4318"
        )
        return 2
    protocol = args.protocol or otlp_protocol()
    try:
        result = push(
            args.tape,
            endpoint,
            protocol=protocol,
            headers=parse_headers(args.header or []),
            content=args.content,
            timeout=args.timeout,
        )
    except EndpointError as exc:
        return _failed(err, exc)
    if args.json:
        dump_json(
            {
                "endpoint": result.endpoint,
                "protocol": result.protocol,
                "spans": result.spans,
                "requests": result.requests,
                "rejected": result.rejected,
                "content_stripped": result.content_stripped,
                "redacted": result.redacted,
                "unconfirmed": result.unconfirmed,
                "messages": list(result.messages),
            }
        )
        return 0
    out.print(
        f"pushed {result.spans} span(s) of {escape(args.tape)} to {escape(result.endpoint)} "
        f"({result.protocol}, {result.requests} request(s))"
    )
    if result.redacted:
        out.print(f"redacted {result.redacted} value(s) on the way out")
    if result.content_stripped:
        out.print(
            f"[yellow]note:[/yellow] arguments, results and messages were left out of {result.content_stripped} "
            f"span(s); pass --content or set {CAPTURE_CONTENT_ENV}=true to send them"
        )
    if result.rejected:
        err.print(
            f"[yellow]warning:[/yellow] the endpoint rejected {result.rejected} span(s): "
            f"{escape('; '.join(result.messages) or 'no reason given')}"
        )
    if result.unconfirmed:
        err.print(
            f"[yellow]warning:[/yellow] {result.unconfirmed} span(s) are not confirmed: the endpoint's answer "
            "could not be read, so it may have rejected some of them; check its logs"
        )
    return 0


def _cmd_pull(args: argparse.Namespace, out: Console, err: Console) -> int:
    since = until = None
    if args.service:
        until = parse_time(args.until) if args.until else _dt.datetime.now(_dt.timezone.utc)
        if args.since:
            since = parse_time(args.since)
        elif args.lookback:
            since = until - parse_duration(args.lookback)
    elif args.since or args.until or args.lookback:
        err.print("[red]error:[/red] --since, --until and --lookback go with --service (a search), not --trace-id")
        return 2
    try:
        result = pull(
            args.jaeger,
            args.out,
            trace_ids=args.trace_id or (),
            service=args.service,
            since=since,
            until=until,
            limit=args.limit,
            api=args.api,
            timeout=args.timeout,
        )
    except EndpointError as exc:
        return _failed(err, exc)
    ingested = None
    if args.db:
        try:
            with open_store(args.db) as store:
                ingested = store.ingest(result.path)
        except StoreError as exc:
            err.print(f"[red]error:[/red] pulled into {escape(str(result.path))}, but {escape(str(exc))}")
            return EXIT_ENDPOINT
    if args.json:
        dump_json(
            {
                "ingested_sessions": None if ingested is None else ingested.sessions,
                "path": str(result.path),
                "api": result.api,
                "traces": result.traces,
                "spans": result.spans,
                "runs": result.runs,
                "steps": result.steps,
                "redacted": result.redacted,
                "urls": list(result.urls),
            }
        )
        return 0
    out.print(
        f"pulled {result.traces} trace(s), {result.spans} span(s) from {escape(args.jaeger)} "
        f"(api {result.api}) into {escape(str(result.path))}: {result.runs} run(s), {result.steps} step(s)"
    )
    if result.redacted:
        out.print(f"redacted {result.redacted} value(s) on the way in")
    if ingested is not None:
        out.print(f"ingested {ingested.sessions} session(s), {ingested.tool_calls} tool call(s) into {escape(args.db)}")
    out.print(f"replay it, or look at it with: otel-agent-replay show {escape(str(result.path))}")
    return 0


def register(sub: Any) -> None:
    """Add ``push`` and ``pull`` to the command's subparsers."""
    push_cmd = sub.add_parser(
        "push",
        help="send a tape's spans to an OTLP endpoint (ids, parents, times kept): view it in Jaeger later",
        epilog=_EXIT_EPILOG.format(verb="sent"),
    )
    push_cmd.add_argument("tape", help="a tape: OTLP JSON Lines, OTLP JSON or Jaeger JSON")
    push_cmd.add_argument(
        "--endpoint",
        metavar="URL",
        help="OTLP endpoint: http://host:4318 (http/protobuf; /v1/traces is added to a bare URL) "
        "or http://host:4317 (grpc); default: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT",
    )
    push_cmd.add_argument(
        "--protocol", choices=PROTOCOLS, help="default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf"
    )
    push_cmd.add_argument(
        "--header",
        action="append",
        metavar="KEY=VALUE",
        help="a header for every request, e.g. authorization=Bearer… (repeatable; OTEL_EXPORTER_OTLP_HEADERS too)",
    )
    push_cmd.add_argument(
        "--content",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"send arguments, results and messages (default: {CAPTURE_CONTENT_ENV})",
    )
    push_cmd.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default: 10)")
    push_cmd.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    push_cmd.set_defaults(handler=_cmd_push)

    pull_cmd = sub.add_parser(
        "pull",
        help="fetch traces from Jaeger's query API into a tape replay accepts (redacted on the way in)",
        epilog=_EXIT_EPILOG.format(verb="written"),
    )
    pull_cmd.add_argument(
        "--jaeger", required=True, metavar="URL", help="the Jaeger query service, e.g. http://localhost:16686"
    )
    pull_cmd.add_argument("--trace-id", action="append", metavar="ID", help="a trace id in hex (repeatable)")
    pull_cmd.add_argument("--service", metavar="NAME", help="search this service's traces instead of ids")
    pull_cmd.add_argument(
        "--since", metavar="TIME", help="with --service: from this time (ISO-8601, or 2h for 2 hours ago)"
    )
    pull_cmd.add_argument("--until", metavar="TIME", help="with --service: up to this time (default: now)")
    pull_cmd.add_argument("--lookback", metavar="DURATION", help="with --service: the last 30m, 2h, 1d … (default 1h)")
    pull_cmd.add_argument("--limit", type=int, default=20, help="with --service: at most this many traces (default 20)")
    pull_cmd.add_argument(
        "--api", choices=APIS, default="auto", help="auto (api/v3, else the classic /api/traces), v3 or classic"
    )
    pull_cmd.add_argument("-o", "--out", required=True, metavar="TAPE", help="the tape to write (replaced)")
    pull_cmd.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default: 10)")
    pull_cmd.add_argument(
        "--db",
        metavar="PATH_OR_URL",
        help="also ingest what was pulled into this evidence store (SQLite or postgresql://)",
    )
    pull_cmd.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    pull_cmd.set_defaults(handler=_cmd_pull)
