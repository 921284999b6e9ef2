"""requests: a replayed request answered at ``HTTPAdapter.send``, above urllib3 and ``http.client``.

Recording stays on ``http.client`` (``_http_client``), which sees every byte requests writes. In a
replay that answers the request, ``HTTPAdapter.send`` (the one requests mounts by default) builds the
``requests.Response`` from the recorded result itself, as the adapter's ``build_response`` would from
a live answer: the status, the reason, the recorded headers with the body's ``Content-Length``, the
encoding from them, the URL, the request, the adapter as its connection, and a
``urllib3.HTTPResponse`` as ``raw``. No pool, connection or ``http.client`` parse runs, so the
request costs about what requests itself costs over a response held in memory.

The request reaches ``http.client`` as before (the answer is the same one, built there) when this
level cannot stand for urllib3: a body that is not bytes or text (a generator, a file), a proxy, an
https request whose CA bundle or client certificate is not there (requests raises for it), an adapter
whose class overrides ``build_response``, ``add_headers`` or ``request_url``, retries on statuses
(urllib3 would send the request again), a host the replay lets through, and a recorded stream,
which ``http.client`` hands out chunk by chunk (paced when asked) as it would live. A live
call the replay makes (``models="live"``, a read-only miss under ``new_episodes``) sends through the
original ``send`` with ``http.client``'s capture point held off, so it is not answered twice.

Nothing is imported for it: ``requests`` is patched at a block's start when it is imported, or as its
import finishes inside the block (``_imports``), whatever the thread.
"""

from __future__ import annotations

import http
import io
import os
import sys
import urllib.parse
from typing import Any

from .. import _activation
from .._context import replaying, suppressed
from .._exchange import intercept, response_result
from .._request import Request
from .._wire import check_result, chunks, is_stream, result_headers
from ._http11 import DROPPED
from ._http_client import passing

_DEFAULT_PORTS = {"http": 80, "https": 443}
_reasons: dict[int, str] = {}


def _reason(status: int) -> str:
    """The reason phrase ``http.client`` reads from the status line the deeper answer writes."""
    found = _reasons.get(status)
    if found is None:
        try:
            found = http.HTTPStatus(status).phrase
        except ValueError:
            found = ""
        _reasons[status] = found
    return found


def _as_request(prepared: Any) -> Request | None:
    """The ``Request`` ``http.client`` would see for a prepared request (None when this level cannot say)."""
    body = prepared.body
    if body is None:
        content = b""
    elif isinstance(body, bytes):
        content = body
    elif isinstance(body, str):
        content = body.encode("utf-8")
    else:
        return None  # a generator or a file: read as it is sent, at http.client
    try:
        parts = urllib.parse.urlsplit(prepared.url)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    return Request(
        (prepared.method or "GET").upper(),
        scheme,
        host,
        _DEFAULT_PORTS[scheme] if port is None else port,  # urllib3's pool names it, and http.client sees it
        parts.path or "/",
        parts.query,
        prepared.headers,  # requests' CaseInsensitiveDict: looked up by any case, as Request.headers is
        content,
    )


def _retries_on_status(adapter: Any) -> bool:
    """Whether urllib3 would send the request again for some answers (the adapter's ``max_retries``)."""
    retries = getattr(adapter, "max_retries", None)
    if retries is None:
        return False
    if getattr(retries, "status_forcelist", None):
        return True
    return bool(getattr(retries, "total", 0) and getattr(retries, "respect_retry_after_header", False))


def _files_there(url: Any, verify: Any, cert: Any) -> bool:
    """Whether the CA bundle and client certificate ``cert_verify`` checks for an https URL exist (else
    the request goes deeper, where requests raises its own error for them)."""
    if not isinstance(url, str) or url[:6].lower() != "https:":
        return True
    paths = [verify] if isinstance(verify, str) else []
    if cert is not None:
        paths.extend([cert] if isinstance(cert, str) else cert)
    return all(isinstance(p, str) and os.path.exists(p) for p in paths)


class _Head:
    """What every response to one recorded head shares (its status, headers and body length, the request's
    method): the raw's headers, requests' headers and encoding, and the ``urllib3.HTTPResponse`` built once
    from them, whose state each response copies (``raw_for``) rather than building it again."""

    __slots__ = ("encoding", "headers", "raw", "reason", "status", "store")

    def __init__(self, module: Any, prepared: Any, result: dict[str, Any], length: int) -> None:
        from urllib3 import HTTPHeaderDict

        status = self.status = result["status"]
        headers = HTTPHeaderDict()
        for name, value in result_headers(result).items():
            if name.lower() not in DROPPED:
                headers.add(name, value)
        headers.add("Content-Length", str(length))
        self.headers = headers
        self.reason = _reason(status)
        self.raw: Any = None
        self.raw = self._built(prepared, b"")
        state = vars(self.raw)
        shared = [v for k, v in state.items() if k not in _FRESH]
        if not state.keys() >= _FRESH or not all(isinstance(v, _IMMUTABLE) for v in shared):
            self.raw = None  # an urllib3 whose response holds other state of its own: built whole each time
        cased = module.structures.CaseInsensitiveDict(headers)
        self.store = cased._store  # requests' own mapping: lower-case name → (name, value), values immutable
        self.encoding = module.utils.get_encoding_from_headers(cased)

    def _built(self, prepared: Any, content: bytes) -> Any:
        from urllib3 import HTTPResponse

        return HTTPResponse(
            body=io.BytesIO(content),
            headers=self.headers.copy(),
            status=self.status,
            version=11,
            version_string="HTTP/1.1",
            reason=self.reason,
            preload_content=False,
            decode_content=False,
            request_method=prepared.method,
            request_url=prepared.path_url,  # what the adapter hands urllib3 (no proxy): the path
        )

    def raw_for(self, prepared: Any, content: bytes) -> Any:
        """A ``urllib3.HTTPResponse`` of this head over ``content``, as ``HTTPResponse(...)`` makes it."""
        template = self.raw
        if template is None:
            return self._built(prepared, content)
        cls: Any = type(template)
        raw = cls.__new__(cls)
        state = vars(raw)
        state.update(vars(template))
        state["headers"] = self.headers.copy()
        state["_fp"] = io.BytesIO(content)
        state["_decoded_buffer"] = type(template._decoded_buffer)()
        state["_request_url"] = prepared.path_url
        return raw


_IMMUTABLE = (type(None), bool, int, float, str, bytes)
_FRESH = frozenset({"headers", "_fp", "_decoded_buffer", "_request_url"})
"""The state of an ``urllib3.HTTPResponse`` each response gets its own of (the rest is immutable and copied)."""
_heads: dict[tuple[Any, ...], _Head] = {}


def _head(module: Any, prepared: Any, result: dict[str, Any], length: int) -> _Head:
    recorded = result.get("headers")
    try:
        key = (result["status"], prepared.method, length, tuple(recorded.items()) if isinstance(recorded, dict) else ())
        found = _heads.get(key)
    except TypeError:  # a header value that is not hashable (not a tape we wrote): nothing to share
        return _Head(module, prepared, result, length)
    if found is None:
        found = _Head(module, prepared, result, length)
        if len(_heads) > 1_000:  # many different heads (a varying header, many sizes): keep memory bounded
            _heads.clear()
        _heads[key] = found
    return found


def _response(module: Any, adapter: Any, prepared: Any, result: dict[str, Any], stream: bool) -> Any:
    """The ``requests.Response`` the adapter builds from the answer ``http.client`` would read."""
    parts = chunks(result)
    content = parts[0] if len(parts) == 1 else b"".join(parts)
    head = _head(module, prepared, result, len(content))
    # drained already when not streamed (Session.send reads the body at once): the body is in _content
    raw = head.raw_for(prepared, content if stream else b"")
    response = module.Response()
    response.status_code = result["status"]
    headers = module.structures.CaseInsensitiveDict()
    headers._store = head.store.copy()
    response.headers = headers
    response.encoding = head.encoding
    response.raw = raw
    response.reason = head.reason
    response.url = prepared.url.decode("utf-8") if isinstance(prepared.url, bytes) else prepared.url
    response.request = prepared
    response.connection = adapter
    if not stream:  # what Session.send reads at once: the body is in memory already
        response._content = content
        response._content_consumed = True
    return response


_HOOKS = ("build_response", "add_headers", "request_url")
"""What a subclass of ``HTTPAdapter`` overrides to change a response or a request (a caching adapter's
``build_response``): such an adapter is answered at http.client, through its own code."""


def _customised(adapter: Any, base: type) -> bool:
    cls = type(adapter)
    return cls is not base and any(getattr(cls, hook) is not getattr(base, hook) for hook in _HOOKS)


def _wrapper(module: Any, original: Any) -> Any:
    base = module.adapters.HTTPAdapter

    def send(
        self: Any,
        request: Any,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> Any:
        def deeper() -> Any:
            return original(self, request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)

        if _activation.settings() is None or replaying() is None or suppressed():
            return deeper()
        if _retries_on_status(self) or _customised(self, base) or not _files_there(request.url, verify, cert):
            return deeper()
        if proxies and module.utils.select_proxy(request.url, proxies):
            return deeper()
        parsed = _as_request(request)
        exchange = intercept(parsed) if parsed is not None else None
        if exchange is None or not exchange.replaying:
            return deeper()

        def live() -> dict[str, Any]:
            with passing():
                response = deeper()
            return response_result(response.status_code, response.headers, response.content)

        result = check_result(exchange.answer(live))
        if is_stream(result):
            # a stream is handed out by http.client chunk by chunk, as live: answered there from this result
            with passing(result, exchange.pace):
                return deeper()
        return _response(module, self, request, result, stream)

    send.__wrapped__ = original  # type: ignore[attr-defined]
    return send


def patch() -> list[_activation.Restore]:
    """Patch ``requests.adapters.HTTPAdapter.send`` (``requests`` imported, and so its adapters)."""
    adapters = sys.modules.get("requests.adapters")
    module = sys.modules.get("requests")
    if adapters is None or module is None or "send" not in adapters.HTTPAdapter.__dict__:
        return []
    return [_activation.replace(adapters.HTTPAdapter, "send", lambda original: _wrapper(module, original))]


_activation.register_client(patch, needs=("requests",))
