"""Integrations: model calls over HTTP (the transports of httpx and httpx2) as model steps, with no code change.

``activate()`` is called by ``record()`` and ``replay()`` for the length of their block.
"""

from __future__ import annotations

from ._routes import MODEL_ROUTES, HttpRoute
from ._transport import HttpActivation, activate, patched

__all__ = ["MODEL_ROUTES", "HttpActivation", "HttpRoute", "activate", "patched"]
