"""HTTP steps: a request that no model route matched is a tool step named ``{METHOD} {host}{path}``.

Its arguments are the query parameters and the body (JSON as JSON, text as text, anything else by
digest and size), its result the status, the allow-listed headers and the body (``_wire``); its span
carries the OpenTelemetry HTTP client attributes. Its side effect comes from the method (``GET``,
``HEAD`` and ``OPTIONS`` are read-only, the rest external) unless ``http_side_effects=`` says
otherwise. One spec per tool name and side effect, made once.
"""

from __future__ import annotations

import hashlib
import threading
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from otel_agent_replay.capture import DEFAULT_REDACTOR, KEY_PLACEHOLDER
from otel_agent_replay.core import SideEffect, StepKind
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import ToolSpec

from ._request import Request
from ._routes import BODY_SIGNATURE

if TYPE_CHECKING:
    from ._activation import HttpSettings

_specs: dict[tuple[str, SideEffect], ToolSpec] = {}
_URL_CREDENTIALS = frozenset(
    {"key", "sig", "code", "x-amz-credential", "x-amz-signature", "x-amz-security-token", "x-goog-credential"}
    | {"x-goog-signature"}
)
"""Query parameters that carry a credential in a URL (Google's ``?key=``, presigned URLs, OAuth ``code``),
whatever the redactor makes of their names elsewhere."""
_lock = threading.Lock()


_names: dict[str, str] = {}


def tool_name(request: Request) -> str:
    """``{METHOD} {host}{path}``: the host with its port when not the scheme's default; no query, no
    credentials; redacted like every tool name (the default redactor is fixed: each text redacted once)."""
    text = f"{request.method} {request.authority}{request.path}"
    name = _names.get(text)
    if name is None:
        name = DEFAULT_REDACTOR.redact_text(text)
        if len(_names) > 10_000:  # an agent that walks an endless space of URLs: keep memory bounded
            _names.clear()
        _names[text] = name
    return name


def _result_attributes(result: Any) -> Mapping[str, Any]:
    status = result.get("status") if isinstance(result, dict) else None
    return {A.HTTP_RESPONSE_STATUS_CODE: status} if isinstance(status, int) else {}


def http_spec(request: Request, settings: HttpSettings) -> ToolSpec:
    """The step spec of an HTTP request."""
    name = tool_name(request)
    effect = settings.side_effect(name, request.method)
    spec = _specs.get((name, effect))
    if spec is not None:
        return spec
    fixed: dict[str, Any] = {
        A.HTTP_REQUEST_METHOD: request.method,
        A.SERVER_ADDRESS: request.host,
        A.URL_PATH: DEFAULT_REDACTOR.redact_text(request.path),
    }
    if request.port is not None:
        fixed[A.SERVER_PORT] = request.port
    spec = ToolSpec(
        name=name,
        kind=StepKind.HTTP,
        side_effect=effect,
        version=None,
        ttl=None,
        ignore=frozenset(),
        leave_out=frozenset(),
        signature=BODY_SIGNATURE,
        is_async=False,
        result_attributes=_result_attributes,
        call_attributes=lambda _args: fixed,
    )
    with _lock:
        if len(_specs) > 10_000:  # an agent that walks an endless space of URLs: keep memory bounded
            _specs.clear()
        _specs[(name, effect)] = spec
    return spec


_queries: dict[str, tuple[tuple[str, str | tuple[str, ...]], ...]] = {}
"""A query string's parameters, parsed once (an agent sends the same few queries again and again); a
query that carries a credential is parsed every time rather than held here."""


def _parsed_query(text: str) -> tuple[tuple[str, str | tuple[str, ...]], ...]:
    found = _queries.get(text)
    if found is not None:
        return found
    query: dict[str, Any] = {}
    credential = False
    for name, value in urllib.parse.parse_qsl(text, keep_blank_values=True):
        if name.lower() in _URL_CREDENTIALS:
            value = KEY_PLACEHOLDER
            credential = True
        if name in query:
            held = query[name]
            query[name] = (*held, value) if isinstance(held, tuple) else (held, value)
        else:
            query[name] = value
    found = tuple(query.items())
    if credential:  # not kept: the query string itself holds the credential
        return found
    if len(_queries) > 10_000:  # an agent that walks an endless space of URLs: keep memory bounded
        _queries.clear()
    _queries[text] = found
    return found


def http_args(request: Request) -> dict[str, Any]:
    """The arguments of an HTTP step: ``query`` (a name → its value, or its values when repeated) and
    ``body`` (JSON, text, or ``{"sha256", "bytes"}``); absent when empty. Each call gets its own
    dicts and lists (the parse of a query string is remembered, its values are immutable)."""
    args: dict[str, Any] = {}
    if request.query:
        args["query"] = {k: v if isinstance(v, str) else list(v) for k, v in _parsed_query(request.query)}
    if request.body:
        args["body"] = _body(request.body, request.headers.get("content-type", ""))
    return args


def _body(content: bytes, content_type: str) -> Any:
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        pass
    if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        try:
            return {"form": dict(urllib.parse.parse_qsl(content.decode("utf-8"), keep_blank_values=True))}
        except UnicodeDecodeError:
            pass
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return {"sha256": hashlib.sha256(content).hexdigest(), "bytes": len(content)}
