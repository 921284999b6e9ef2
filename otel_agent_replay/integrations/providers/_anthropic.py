"""Anthropic's Messages API (JSON and server-sent events)."""

from __future__ import annotations

from .._routes import HttpRoute
from ._base import Provider

ANTHROPIC = Provider("anthropic", (HttpRoute("anthropic.messages", "/v1/messages", "anthropic"),))
