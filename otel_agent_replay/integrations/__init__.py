"""Integrations: every HTTP request an agent makes, and every MCP tool call, as steps with no code change.

Two axes, one module each: ``clients`` (where a client's requests are intercepted and how its own
response type is built from the tape: httpx and httpx2, aiohttp, the standard library's
``http.client``) and ``providers`` (which routes, usage fields and stream framings a model API has).
Between them, ``_exchange`` decides what a request is (a model step, an HTTP step, or not ours) and
records or answers it. ``activate()`` is called by ``record()`` and ``replay()`` for their block.
"""

from __future__ import annotations

from . import clients as _clients  # noqa: F401 (registers the clients' capture points)
from ._activation import HttpActivation, HttpSettings, activate, hold_mcp, patched, side_effect_rules
from ._context import SUPPRESS_HTTP_KEY, suppressed
from ._exchange import Exchange, Stream, intercept, response_result
from ._mcp_effects import mcp_side_effect_rules
from ._request import Request
from ._routes import HttpRoute
from ._wire import check_result, chunks, is_stream, result_headers
from .clients._http11 import response_bytes
from .providers import DEFAULT_ROUTES as MODEL_ROUTES

__all__ = [
    "MODEL_ROUTES",
    "SUPPRESS_HTTP_KEY",
    "Exchange",
    "HttpActivation",
    "HttpRoute",
    "HttpSettings",
    "Request",
    "Stream",
    "activate",
    "check_result",
    "chunks",
    "hold_mcp",
    "intercept",
    "is_stream",
    "mcp_side_effect_rules",
    "patched",
    "response_bytes",
    "response_result",
    "result_headers",
    "side_effect_rules",
    "suppressed",
]
