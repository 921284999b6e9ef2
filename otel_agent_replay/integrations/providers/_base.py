"""What a provider module offers."""

from __future__ import annotations

from dataclasses import dataclass

from .._routes import HttpRoute


@dataclass(frozen=True, slots=True)
class Provider:
    """A model API: its ``gen_ai.provider.name`` and its routes (each route knows its reader)."""

    name: str
    routes: tuple[HttpRoute, ...]
