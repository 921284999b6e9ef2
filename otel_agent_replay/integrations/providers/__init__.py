"""Providers: which routes, usage fields and stream framings each model API has.

One module a provider; each offers a ``Provider``. ``DEFAULT_ROUTES`` is every provider's routes in
order (the first match wins), and ``provider_for_host`` names who answered from the host a request
was sent to, where one API is served under several names (OpenAI's paths, Gemini's on Vertex AI).
"""

from __future__ import annotations

from .._routes import HttpRoute
from ._anthropic import ANTHROPIC
from ._base import Provider
from ._bedrock import BEDROCK
from ._cohere import COHERE
from ._gemini import GEMINI
from ._ollama import OLLAMA
from ._openai import OPENAI

PROVIDERS: tuple[Provider, ...] = (ANTHROPIC, BEDROCK, GEMINI, OLLAMA, COHERE, OPENAI)
"""Every built-in provider; their routes are matched in this order. OpenAI's path ends are the most
general (``/embeddings`` also ends Ollama's ``/api/embeddings``), so they come last."""

DEFAULT_ROUTES = tuple(route for provider in PROVIDERS for route in provider.routes)
"""The routes recorded by default."""

_BY_NAME = {provider.name: provider for provider in PROVIDERS}


def provider_for_host(route: HttpRoute, host: str) -> str:
    """Who answered a request to ``host`` on ``route``: what the host says for the route's provider
    (``api.groq.com`` on an OpenAI route is ``groq``), else the route's own provider. A user's route
    naming a built-in provider gets the same rule."""
    provider = _BY_NAME.get(route.provider)
    if provider is not None and provider.by_host is not None:
        return provider.by_host(host) or route.provider
    return route.provider


__all__ = ["DEFAULT_ROUTES", "PROVIDERS", "Provider", "provider_for_host"]
