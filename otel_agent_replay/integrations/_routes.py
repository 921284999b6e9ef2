"""The model routes: which HTTP requests are model steps, and the step spec of each."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from otel_agent_replay.capture import PRESET_TOKEN, expand
from otel_agent_replay.core import ConfigurationError, StepKind
from otel_agent_replay.instrumentation import ToolSpec

from ._genai import response_attributes


def _body(**body: Any) -> Any:
    """The shape of a model route's step: the request's JSON body, spread as its arguments."""
    raise AssertionError("never called")  # pragma: no cover


_BODY_SIGNATURE = inspect.signature(_body)


@dataclass(frozen=True, slots=True)
class HttpRoute:
    """A model API route: a ``POST`` whose URL path ends with ``path`` is the model step ``name``.

    ``provider`` is written as ``gen_ai.provider.name``; ``operation`` is ``chat`` or
    ``embeddings`` (the span is ``{operation} {model}``).
    """

    name: str
    path: str
    provider: str
    operation: str = "chat"
    spec: ToolSpec = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name or not self.path.startswith("/"):
            raise ConfigurationError(
                f"HttpRoute(name={self.name!r}, path={self.path!r}): give a name and a path starting with '/'"
            )
        spec = ToolSpec(
            name=self.name,
            kind=StepKind.LLM,
            side_effect=None,
            version=None,
            ttl=None,
            ignore=frozenset(),
            leave_out=frozenset(),
            signature=_BODY_SIGNATURE,
            is_async=False,
            provider=self.provider,
            key_ignore=expand((PRESET_TOKEN,)),  # request ids, `user`, tool-call ids minted per run …
            result_attributes=response_attributes,  # on the replay span too
        )
        object.__setattr__(self, "spec", spec)

    def matches(self, method: str, path: str) -> bool:
        """True for a ``POST`` to this route's path (the path's end, so any base URL matches)."""
        return method == "POST" and path.rstrip("/").endswith(self.path)


MODEL_ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute("openai.chat.completions", "/chat/completions", "openai"),
    HttpRoute("openai.responses", "/responses", "openai"),
    HttpRoute("openai.completions", "/completions", "openai"),
    HttpRoute("openai.embeddings", "/embeddings", "openai", "embeddings"),
    HttpRoute("anthropic.messages", "/v1/messages", "anthropic"),
)
"""The routes recorded by default: OpenAI-compatible APIs and Anthropic messages (first match wins)."""


def routes_for(extra: Iterable[HttpRoute]) -> tuple[HttpRoute, ...]:
    """The user's ``http_routes=`` (checked first), then the default model routes."""
    added = tuple(extra)
    for route in added:
        if not isinstance(route, HttpRoute):
            raise ConfigurationError(f"http_routes= takes HttpRoute values, got {route!r}")
    return (*added, *MODEL_ROUTES)


def match(routes: tuple[HttpRoute, ...], method: str, path: str) -> HttpRoute | None:
    """The first route a request matches, else None."""
    for route in routes:
        if route.matches(method, path):
            return route
    return None
