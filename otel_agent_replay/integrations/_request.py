"""An HTTP request as any client is about to send it: what a client's capture point builds, what
``_exchange`` intercepts and ``_http_steps`` turns into a step. Its own module, so that both depend
on it and not on each other."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Request:
    """An HTTP request as any client is about to send it."""

    method: str
    scheme: str
    host: str
    """Lower-case, without port or credentials."""
    port: int | None
    path: str
    query: str = ""
    """The raw query string (without ``?``)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Lower-case names."""
    body: bytes = b""

    @classmethod
    def from_url(cls, method: str, url: str, headers: Mapping[str, str], body: bytes) -> Request:
        """A request from its absolute URL."""
        parts = urllib.parse.urlsplit(url)
        return cls(
            method.upper(),
            parts.scheme.lower(),
            (parts.hostname or "").lower(),
            parts.port,
            parts.path or "/",
            parts.query,
            {str(k).lower(): str(v) for k, v in headers.items()},
            body,
        )

    @property
    def authority(self) -> str:
        """The host with its port when that is not the scheme's default."""
        if self.port is None or _DEFAULT_PORTS.get(self.scheme) == self.port:
            return self.host
        return f"{self.host}:{self.port}"
