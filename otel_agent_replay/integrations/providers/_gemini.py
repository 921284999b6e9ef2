"""Google's Gemini API (``generativelanguage.googleapis.com``): generate, stream and embed.

The model is part of the URL (``/v1beta/models/gemini-2.0-flash:generateContent``), so each route's
template takes it as the ``model`` placeholder; the body holds no model. Streaming is a route of its
own (``:streamGenerateContent``, server-sent events with ``?alt=sse``), never a body field. Only the
body and the model become the step's arguments: the query (``alt``, and ``key`` when the API key
travels in the URL) and the headers (``x-goog-api-key``) are never recorded.

What a response says sits under camelCase names: ``usageMetadata.promptTokenCount`` /
``candidatesTokenCount``, ``candidates[].finishReason``, ``responseId``, ``modelVersion``; a stream's
last event carries the final usage and finish reason. Vertex AI speaks the same paths: on its hosts
the provider is ``gcp.vertex_ai``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_agent_replay.core import attributes as A

from .._genai import Facts
from .._routes import HttpRoute
from ._base import Provider, always, never

NAME = "gcp.gemini"
VERTEX = "gcp.vertex_ai"
_VERTEX_HOST = "aiplatform.googleapis.com"


def by_host(host: str) -> str | None:
    """Vertex AI serves the same paths (``…/publishers/google/models/{model}:generateContent``) on
    ``aiplatform.googleapis.com`` and its regional hosts (``us-central1-aiplatform.googleapis.com``)."""
    if host == _VERTEX_HOST or host.endswith(("-" + _VERTEX_HOST, "." + _VERTEX_HOST)):
        return VERTEX
    return None


def read(facts: Facts, obj: Mapping[str, Any]) -> None:
    """What a Gemini response body (or one streamed chunk) says."""
    facts.set_model(obj.get("modelVersion"))
    facts.set_id(obj.get("responseId"))
    for candidate in obj.get("candidates") or ():
        if isinstance(candidate, Mapping):
            facts.reason(candidate.get("finishReason"))
    usage = obj.get("usageMetadata")
    if isinstance(usage, Mapping):
        facts.usage(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))


GEMINI = Provider(
    NAME,
    (
        HttpRoute("gemini.generate_content", "/models/{model}:generateContent", NAME, reader=read, streams=never),
        HttpRoute(
            "gemini.stream_generate_content", "/models/{model}:streamGenerateContent", NAME, reader=read, streams=always
        ),
        HttpRoute(
            "gemini.embed_content", "/models/{model}:embedContent", NAME, A.OP_EMBEDDINGS, reader=read, streams=never
        ),
        HttpRoute(
            "gemini.batch_embed_contents",
            "/models/{model}:batchEmbedContents",
            NAME,
            A.OP_EMBEDDINGS,
            reader=read,
            streams=never,
        ),
    ),
    by_host,
)
