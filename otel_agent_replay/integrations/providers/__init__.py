"""Providers: which routes, usage fields and stream framings each model API has.

One module a provider; each offers a ``Provider``. ``DEFAULT_ROUTES`` is every provider's routes in
order (the first match wins), and ``provider_for_host`` names who answered an OpenAI-compatible path
from the host it was sent to.
"""

from __future__ import annotations

from ._anthropic import ANTHROPIC
from ._base import Provider
from ._bedrock import BEDROCK
from ._openai import OPENAI, provider_for_host

PROVIDERS: tuple[Provider, ...] = (ANTHROPIC, BEDROCK, OPENAI)
"""Every built-in provider; their routes are matched in this order."""

DEFAULT_ROUTES = tuple(route for provider in PROVIDERS for route in provider.routes)
"""The routes recorded by default."""

__all__ = ["DEFAULT_ROUTES", "PROVIDERS", "Provider", "provider_for_host"]
