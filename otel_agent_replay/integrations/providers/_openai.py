"""OpenAI's API and every API that speaks its paths (Mistral, Groq, OpenRouter, a local vLLM …).

One path serves many providers here, so who answered is read from the host the request went to;
an unknown host (a local server, a gateway) keeps ``openai``, the protocol it speaks.
"""

from __future__ import annotations

from otel_agent_replay.core import attributes as A

from .._routes import HttpRoute
from ._base import Provider

HOSTS: dict[str, str] = {
    "api.openai.com": "openai",
    "api.mistral.ai": "mistral_ai",
    "api.groq.com": "groq",
    "openrouter.ai": "openrouter",
    "api.deepseek.com": "deepseek",
    "api.together.xyz": "together_ai",
    "api.fireworks.ai": "fireworks_ai",
    "api.perplexity.ai": "perplexity",
    "api.x.ai": "x_ai",
    "generativelanguage.googleapis.com": "gcp.gemini",
}
"""Hosts that speak the OpenAI paths, and the provider each is (the conventions' names where they exist)."""


def by_host(host: str) -> str | None:
    """The provider a host of OpenAI's paths is (None: unknown, so ``openai``)."""
    if host in HOSTS:
        return HOSTS[host]
    for known, provider in HOSTS.items():
        if host.endswith("." + known):
            return provider
    if host.endswith(".openai.azure.com"):
        return "azure.ai.openai"
    return None


OPENAI = Provider(
    "openai",
    (
        HttpRoute("openai.chat.completions", "/chat/completions", "openai"),
        HttpRoute("openai.responses", "/responses", "openai"),
        HttpRoute("openai.completions", "/completions", "openai"),
        HttpRoute("openai.embeddings", "/embeddings", "openai", A.OP_EMBEDDINGS),
    ),
    by_host,
)
