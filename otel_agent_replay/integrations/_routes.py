"""The model routes: which HTTP requests are model steps, matched by pattern, and the step spec of each.

A route matches the method and the end of the URL path by a template (``/models/{model}:generateContent``:
each ``{name}`` is one path segment's text, given back as an argument) or by a compiled regular
expression (its named groups are the placeholders), and optionally the host. One route serves every
model name and every base URL. Which provider answered comes from the route, or from the host where
one path is spoken by many (``providers.provider_for_host``).
"""

from __future__ import annotations

import inspect
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_agent_replay.capture import PRESET_TOKEN, expand
from otel_agent_replay.core import ConfigurationError, StepKind
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import ToolSpec

from ._genai import Reader, body_streams, call_attributes, common_reader, result_attributes


def _body(**body: Any) -> Any:
    """The shape of a model route's step: the request's JSON body (and the path's placeholders) as arguments."""
    raise AssertionError("never called")  # pragma: no cover


BODY_SIGNATURE = inspect.signature(_body)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def compile_path(path: str | re.Pattern[str]) -> re.Pattern[str]:
    """A route's path as a regular expression searched against the URL path's end.

    A template's literal text is matched as it is and each ``{name}`` as one segment's text (no ``/``);
    a compiled pattern is used as it is (``search``: anchor it yourself).
    """
    if isinstance(path, re.Pattern):
        return path
    parts: list[str] = []
    last = 0
    for found in _PLACEHOLDER.finditer(path):
        parts.append(re.escape(path[last : found.start()]))
        parts.append(f"(?P<{found.group(1)}>[^/]+?)")
        last = found.end()
    parts.append(re.escape(path[last:]))
    return re.compile("".join(parts) + "/?$")


@dataclass(frozen=True, slots=True)
class HttpRoute:
    """A model API route: a request whose method is ``method`` and whose URL path ends with ``path``
    (a template with ``{placeholders}`` or a compiled regular expression), at ``host`` when one is
    given, is the model step ``name``.

    ``provider`` is written as ``gen_ai.provider.name`` (for an OpenAI-compatible route the host may
    name another provider); ``operation`` is ``chat`` or ``embeddings`` (the span is
    ``{operation} {model}``); ``model`` names the argument that holds the model (a placeholder of the
    path, such as Bedrock's ``modelId``, or a field of the body).
    """

    name: str
    path: str | re.Pattern[str]
    provider: str
    operation: str = A.OP_CHAT
    method: str = "POST"
    host: str | None = None
    model: str = "model"
    reader: Reader = field(default=common_reader, compare=False)
    """What a response body (or a stream event) says: model, id, finish reasons, usage."""
    streams: Callable[[Mapping[str, Any]], bool] = field(default=body_streams, compare=False)
    """Whether a request streams, from its arguments (default: the body's ``stream: true``)."""
    pattern: re.Pattern[str] = field(init=False, compare=False, repr=False)
    spec: ToolSpec = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        is_pattern = isinstance(self.path, re.Pattern)
        if not self.name or not (is_pattern or (isinstance(self.path, str) and self.path.startswith("/"))):
            raise ConfigurationError(
                f"HttpRoute(name={self.name!r}, path={self.path!r}): give a name and a path starting with '/' "
                "(or a compiled regular expression)"
            )
        object.__setattr__(self, "method", self.method.upper())
        object.__setattr__(self, "host", self.host.lower() if self.host else None)
        object.__setattr__(self, "pattern", compile_path(self.path))
        object.__setattr__(self, "spec", self.spec_for(self.provider))

    def spec_for(self, provider: str) -> ToolSpec:
        """The step spec of this route when ``provider`` answers it."""
        return ToolSpec(
            name=self.name,
            kind=StepKind.LLM,
            side_effect=None,
            version=None,
            ttl=None,
            ignore=frozenset(),
            leave_out=frozenset(),
            signature=BODY_SIGNATURE,
            is_async=False,
            provider=provider,
            key_ignore=expand((PRESET_TOKEN,)),  # request ids, `user`, tool-call ids minted per run …
            model_argument=self.model,
            operation=None if self.operation == A.OP_CHAT else self.operation,
            result_attributes=result_attributes(self.reader),
            call_attributes=call_attributes(self.streams),
        )

    def matches(self, method: str, host: str, path: str) -> dict[str, str] | None:
        """The path's placeholders (unquoted) when a request matches this route, else None."""
        if method != self.method or (self.host is not None and host != self.host):
            return None
        found = self.pattern.search(path)
        if found is None:
            return None
        return {k: urllib.parse.unquote(v) for k, v in found.groupdict().items() if v is not None}


@dataclass(frozen=True, slots=True)
class Matched:
    """A request matched to a route: the route and the path's placeholders."""

    route: HttpRoute
    placeholders: dict[str, str]


def routes_for(extra: Iterable[HttpRoute], defaults: tuple[HttpRoute, ...]) -> tuple[HttpRoute, ...]:
    """The user's ``http_routes=`` (checked first), then the default model routes."""
    added = tuple(extra)
    for route in added:
        if not isinstance(route, HttpRoute):
            raise ConfigurationError(f"http_routes= takes HttpRoute values, got {route!r}")
    return (*added, *defaults)


def match(routes: tuple[HttpRoute, ...], method: str, host: str, path: str) -> Matched | None:
    """The first route a request matches, else None."""
    for route in routes:
        placeholders = route.matches(method, host, path)
        if placeholders is not None:
            return Matched(route, placeholders)
    return None
