"""What a provider module offers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._routes import HttpRoute


@dataclass(frozen=True, slots=True)
class Provider:
    """A model API: its ``gen_ai.provider.name`` and its routes (each route knows its reader)."""

    name: str
    routes: tuple[HttpRoute, ...]


def always(_args: Mapping[str, Any]) -> bool:
    """The ``streams`` rule of a route that always streams (the stream is in its path)."""
    return True


def never(_args: Mapping[str, Any]) -> bool:
    """The ``streams`` rule of a route that never streams (embeddings)."""
    return False
