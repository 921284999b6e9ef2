"""Clients: where each HTTP client's requests are intercepted, and how its own response type is built
from a recorded result. One module a client; each registers its ``patch`` with the activation, with the
modules it needs imported (the activation patches it once they are, never importing them itself)."""

from __future__ import annotations

from ._aiohttp import patch as patch_aiohttp
from ._http_client import patch as patch_http_client
from ._http_client import patch_urllib3
from ._httpx import patch as patch_httpx
from ._requests import patch as patch_requests

__all__ = ["patch_aiohttp", "patch_http_client", "patch_httpx", "patch_requests", "patch_urllib3"]
