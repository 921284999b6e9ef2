"""HTTP to trace backends (OTLP receivers, Jaeger's query API): bounded retries, errors that say where.

``request`` answers every HTTP status to its caller, which knows what a 404 means there; it
retries, a bounded number of times, only what is worth retrying (a refused or dropped
connection, a timeout, 429/502/503/504) and raises ``EndpointError`` when the backend cannot be
reached at all. Proxies from the environment are used, except for loopback addresses.
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urlsplit

from otel_agent_replay.core import EndpointError

__all__ = ["Response", "parse_headers", "request"]

_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_MAX_RETRY_AFTER = 5.0


@dataclass(frozen=True)
class Response:
    """An HTTP answer: status, body and headers (lower-case names)."""

    status: int
    body: bytes
    headers: Mapping[str, str]
    url: str

    def excerpt(self, limit: int = 300) -> str:
        """The start of the body as text, for error messages."""
        text = self.body[:limit].decode("utf-8", "replace").strip()
        return text + ("…" if len(self.body) > limit else "")


def _opener(url: str) -> urllib.request.OpenerDirector:
    host = urlsplit(url).hostname or ""
    handlers: list[urllib.request.BaseHandler] = [_NoRaise()]
    if host in _LOOPBACK:
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


class _NoRaise(urllib.request.HTTPErrorProcessor):
    """Hand every HTTP status back as a response instead of raising HTTPError."""

    def http_response(
        self, request: urllib.request.Request, response: http.client.HTTPResponse
    ) -> http.client.HTTPResponse:
        return response

    https_response = http_response


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    attempts: int = 3,
    what: str = "the request",
) -> Response:
    """Send one HTTP request, retrying transient failures up to ``attempts`` times in all.

    Raises ``EndpointError`` when no answer came (connection refused, unknown host, timeout);
    any HTTP status is returned, retryable ones after the last attempt.
    """
    opener = _opener(url)
    delay = 0.5
    problem = ""
    for attempt in range(1, max(1, attempts) + 1):
        req = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
        try:
            with opener.open(req, timeout=timeout) as answer:
                got = Response(answer.status, answer.read(), _lower(answer.headers), url)
        except urllib.error.URLError as exc:
            reason = exc.reason
            problem = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
        except TimeoutError:
            problem = f"no answer within {timeout:g}s"
        except (OSError, http.client.HTTPException) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if got.status not in _RETRY_STATUSES or attempt == attempts:
                return got
            delay = _retry_after(got, delay)
        if attempt < attempts:
            time.sleep(delay)
            delay *= 2
    raise EndpointError(
        f"{what}: {method} {url} failed after {attempts} attempt(s): {problem}; check that the backend is "
        f"running and that the URL (scheme, host, port) is right"
    )


def _retry_after(response: Response, default: float) -> float:
    value = response.headers.get("retry-after", "")
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER)
    except ValueError:
        return default


def _lower(headers: Message) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.items()}


def parse_headers(items: list[str] | tuple[str, ...], *, source: str = "--header") -> dict[str, str]:
    """``key=value`` strings as a dict; the value may contain ``=``. Raises ``ConfigurationError``."""
    from otel_agent_replay.core import ConfigurationError

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError(f"{source} {item!r} is not key=value (for example {source} authorization=Bearer…)")
        out[key.strip()] = value.strip()
    return out
