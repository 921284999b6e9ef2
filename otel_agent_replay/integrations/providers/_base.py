"""What a provider module offers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._routes import HttpRoute


@dataclass(frozen=True, slots=True)
class Provider:
    """A model API: its ``gen_ai.provider.name`` and its routes (each route knows its reader)."""

    name: str
    routes: tuple[HttpRoute, ...]
    by_host: Callable[[str], str | None] | None = field(default=None, compare=False)
    """Who answered a request on a route of this provider, from the host it went to, where one API is
    served under several names (OpenAI's paths by Mistral or Groq; Gemini's by Vertex AI); None (or
    no rule): the route's own provider."""


def always(_args: Mapping[str, Any]) -> bool:
    """The ``streams`` rule of a route that always streams (the stream is in its path)."""
    return True


def never(_args: Mapping[str, Any]) -> bool:
    """The ``streams`` rule of a route that never streams (embeddings)."""
    return False
