"""Backends: the OTLP side of a recording, ``push`` to an OTLP endpoint, ``pull`` from Jaeger, and HTTP to them."""

from __future__ import annotations

from ._http import parse_headers
from ._jaeger_answer import Report, redact_traces
from ._otlp_config import CAPTURE_CONTENT_ENV, OTLP_ENDPOINT_ENVS, PROTOCOLS, OtlpOption, otlp_processor, otlp_protocol
from ._otlp_export import OtlpProcessor, OtlpStats, span_with
from ._pull import APIS, parse_duration, parse_time, pull
from ._push import push, tape_messages

__all__ = [
    "APIS",
    "CAPTURE_CONTENT_ENV",
    "OTLP_ENDPOINT_ENVS",
    "PROTOCOLS",
    "OtlpOption",
    "OtlpProcessor",
    "OtlpStats",
    "Report",
    "otlp_processor",
    "otlp_protocol",
    "parse_duration",
    "parse_headers",
    "parse_time",
    "pull",
    "push",
    "redact_traces",
    "span_with",
    "tape_messages",
]
