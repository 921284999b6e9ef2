"""Amazon Bedrock runtime: Converse and InvokeModel, whole and streamed (the AWS event stream).

The model is in the URL (``/model/{modelId}/converse``), so it is the ``modelId`` argument. Converse
reports ``usage.inputTokens`` / ``outputTokens`` and ``stopReason`` (a stream: in its ``metadata``
and ``messageStop`` events). InvokeModel's body is the model's own format (Anthropic's, Meta's …):
read with the common fields, plus Bedrock's ``amazon-bedrock-invocationMetrics``; each event of
``invoke-with-response-stream`` carries one such body in base64 (``{"bytes": ...}``).

Nothing of the request but its body is recorded, so the AWS signature (``Authorization``,
``X-Amz-Date``, ``X-Amz-Security-Token``, ``X-Amz-Content-Sha256``) never reaches a tape.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import orjson

from .. import _framing
from .._eventstream import AWS_EVENT_STREAM
from .._genai import Facts, common_reader
from .._routes import HttpRoute
from ._base import Provider

_framing.register(AWS_EVENT_STREAM)

PROVIDER = "aws.bedrock"


def converse_reader(facts: Facts, obj: Mapping[str, Any]) -> None:
    """A Converse response, or one event of its stream."""
    facts.reason(obj.get("stopReason"))
    usage = obj.get("usage")
    if isinstance(usage, Mapping):
        facts.usage(usage.get("inputTokens"), usage.get("outputTokens"))


def invoke_reader(facts: Facts, obj: Mapping[str, Any]) -> None:
    """An InvokeModel body in the model's format, or one stream event wrapping one in base64."""
    chunk = obj.get("bytes")
    if isinstance(chunk, str):  # {"bytes": ...}: a stream event wrapping the chunk's own body
        try:
            inner = orjson.loads(base64.b64decode(chunk, validate=True))
        except (binascii.Error, ValueError, orjson.JSONDecodeError):
            inner = None
        if isinstance(inner, Mapping):
            invoke_reader(facts, inner)
        return
    common_reader(facts, obj)
    facts.reason(obj.get("stopReason") or obj.get("stop_reason") or obj.get("completionReason"))
    metrics = obj.get("amazon-bedrock-invocationMetrics")
    if isinstance(metrics, Mapping):
        facts.usage(metrics.get("inputTokenCount"), metrics.get("outputTokenCount"))


def _always(_args: Mapping[str, Any]) -> bool:
    return True


def _never(_args: Mapping[str, Any]) -> bool:
    return False


def _route(name: str, suffix: str, reader: Any, streams: Any) -> HttpRoute:
    return HttpRoute(name, "/model/{modelId}/" + suffix, PROVIDER, model="modelId", reader=reader, streams=streams)


BEDROCK = Provider(
    PROVIDER,
    (
        _route("bedrock.converse", "converse", converse_reader, _never),
        _route("bedrock.converse_stream", "converse-stream", converse_reader, _always),
        _route("bedrock.invoke_model", "invoke", invoke_reader, _never),
        _route("bedrock.invoke_model_stream", "invoke-with-response-stream", invoke_reader, _always),
    ),
)
"""The Bedrock runtime's four model routes (any host: a regional endpoint, a VPC endpoint, a proxy)."""
