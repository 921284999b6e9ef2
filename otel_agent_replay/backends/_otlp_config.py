"""Which OTLP exporter a recording gets: ``record(otlp=...)`` and the standard variables.

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL: HTTP adds
``/v1/traces``), ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` (``http/protobuf`` or ``grpc``), and the
GenAI content switch ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. Headers, timeout,
certificates and compression are read by OpenTelemetry's exporters themselves.
"""

from __future__ import annotations

import logging
import os
from typing import TypeAlias
from urllib.parse import urlsplit

from opentelemetry.sdk.trace.export import SpanExporter

from otel_agent_replay.core import ConfigurationError

from ._otlp_export import OtlpProcessor

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "OTLP_ENDPOINT_ENVS",
    "PROTOCOLS",
    "OtlpOption",
    "content_capture_enabled",
    "env_endpoint",
    "make_exporter",
    "otlp_processor",
    "otlp_protocol",
    "traces_url",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_ON = frozenset({"true", "1", "yes", "span_only", "span_and_event"})
_CONTENT_OFF = frozenset({"", "false", "0", "no", "no_content", "event_only"})
_log = logging.getLogger("otel_agent_replay.otlp")


def content_capture_enabled(value: str | None = None) -> bool:
    """Whether content goes to OTLP: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (or ``value``).

    ``true`` (and the content capturing modes ``SPAN_ONLY`` / ``SPAN_AND_EVENT``) turn it on;
    unset, ``false``, ``NO_CONTENT`` and ``EVENT_ONLY`` leave it off. Other values are off, with a
    logged warning naming the accepted ones.
    """
    text = (os.environ.get(CAPTURE_CONTENT_ENV, "") if value is None else value).strip().lower()
    if text in _CONTENT_ON:
        return True
    if text not in _CONTENT_OFF:
        _log.warning(
            "%s=%r is not understood, so content stays off for OTLP; use true or false",
            CAPTURE_CONTENT_ENV,
            text,
        )
    return False


OTLP_ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("http/protobuf", "grpc")
_DEFAULT_BASE = {"http/protobuf": "http://localhost:4318", "grpc": "http://localhost:4317"}
OtlpOption: TypeAlias = "bool | str | SpanExporter | None"


def otlp_protocol() -> str:
    """The OTLP protocol the standard variables ask for (``http/protobuf`` unless they say ``grpc``)."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"
    if protocol not in PROTOCOLS:
        raise ConfigurationError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported; use 'http/protobuf' or 'grpc'"
        )
    return protocol


def traces_url(base: str, protocol: str) -> str:
    """The traces endpoint for a URL: HTTP adds ``/v1/traces`` to a URL without a path."""
    parts = urlsplit(base.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"OTLP endpoint {base!r} is not a URL; give one like http://localhost:4318 "
            f"(http/protobuf) or http://localhost:4317 (grpc)"
        )
    if protocol == "http/protobuf" and parts.path in ("", "/"):
        return base.strip().rstrip("/") + "/v1/traces"
    return base.strip()


def env_endpoint(protocol: str) -> str:
    """The traces endpoint from the standard variables, or OpenTelemetry's default."""
    specific = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if specific:
        return specific
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or _DEFAULT_BASE[protocol]
    if protocol == "grpc":
        return base
    return base.rstrip("/") + "/v1/traces"


def make_exporter(endpoint: str | None) -> tuple[SpanExporter, str]:
    """OpenTelemetry's OTLP exporter for ``endpoint`` (None: the standard variables), and its URL."""
    protocol = otlp_protocol()
    url = env_endpoint(protocol) if endpoint is None else traces_url(endpoint, protocol)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc(endpoint=url), url
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

    return Http(endpoint=url), url


def otlp_processor(
    option: OtlpOption, *, provider_is_ours: bool, capture_content: bool | None, flush_timeout: float
) -> OtlpProcessor | None:
    """The OTLP side of one recording, or None.

    ``option``: None follows the standard variables when ``record()`` set up the tracer provider
    (an application with its own provider exports its spans itself); True uses the variables (or
    OpenTelemetry's default endpoint); a URL sends there; an exporter is used as given; False: none.
    """
    if option is False:
        return None
    protocol = ""
    if option is None:
        if not provider_is_ours or not any(os.environ.get(name, "").strip() for name in OTLP_ENDPOINT_ENVS):
            return None
        exporter, url = make_exporter(None)
        protocol = otlp_protocol()
    elif option is True:
        exporter, url = make_exporter(None)
        protocol = otlp_protocol()
    elif isinstance(option, str):
        exporter, url = make_exporter(option)
        protocol = otlp_protocol()
    elif isinstance(option, SpanExporter):
        exporter, url = option, ""
    else:
        raise ConfigurationError(
            f"record(otlp={option!r}): give True, False, an endpoint URL such as http://localhost:4318, "
            f"or an OpenTelemetry SpanExporter"
        )
    content = content_capture_enabled() if capture_content is None else capture_content
    return OtlpProcessor(exporter, url, capture_content=content, flush_timeout=flush_timeout, protocol=protocol)
