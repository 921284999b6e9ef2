"""Cohere's v2 API (``/v2/chat``, ``/v2/embed``): JSON, and server-sent events for ``"stream": true``.

A chat response carries ``id``, ``finish_reason`` and ``usage`` with two counts: ``tokens`` (what the
model read and wrote) and ``billed_units`` (what was charged); the first is preferred, the second
used when it is all there is. A stream names its id in ``message-start`` and its finish reason and
usage in ``message-end``'s ``delta``. An embed response reports its usage under ``meta``. Counts
may be written as numbers with a fraction part (``12.0``): whole ones are taken as integers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_agent_replay.core import attributes as A

from .._genai import Facts
from .._routes import HttpRoute
from ._base import Provider, never

NAME = "cohere"


def _whole(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _tokens(usage: Mapping[str, Any], name: str) -> object:
    for group in ("tokens", "billed_units"):
        counts = usage.get(group)
        if isinstance(counts, Mapping):
            value = _whole(counts.get(name))
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def read(facts: Facts, obj: Mapping[str, Any]) -> None:
    """What a Cohere v2 response (or one stream event) says."""
    facts.set_id(obj.get("id"))
    for holder in (obj, obj.get("delta")):
        if not isinstance(holder, Mapping):
            continue
        facts.reason(holder.get("finish_reason"))
        for name in ("usage", "meta"):
            usage = holder.get(name)
            if isinstance(usage, Mapping):
                facts.usage(_tokens(usage, "input_tokens"), _tokens(usage, "output_tokens"))


COHERE = Provider(
    NAME,
    (
        HttpRoute("cohere.chat", "/v2/chat", NAME, reader=read),
        HttpRoute("cohere.embed", "/v2/embed", NAME, A.OP_EMBEDDINGS, reader=read, streams=never),
    ),
)
