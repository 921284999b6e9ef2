"""GenAI attributes read from a model route's request and response bodies.

``Facts`` collects what a response says (model, id, finish reasons, token usage); each provider
gives a reader that knows its own fields (``providers``), and ``result_attributes`` turns a recorded
result (a whole body, or a stream's events in their framing) into span attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from otel_agent_replay.core import attributes as A

from ._framing import event_payloads


class Facts:
    """What a response says, filled in by a provider's reader as bodies or events go by."""

    __slots__ = ("cache_read", "cache_write", "finish", "input_tokens", "model", "output_tokens", "response_id")

    def __init__(self) -> None:
        self.model: str | None = None
        self.response_id: str | None = None
        self.finish: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cache_read: int | None = None
        self.cache_write: int | None = None

    def set_model(self, value: object) -> None:
        if isinstance(value, str) and value:
            self.model = value

    def set_id(self, value: object) -> None:
        """The first id seen wins (a stream repeats it)."""
        if isinstance(value, str) and value and self.response_id is None:
            self.response_id = value

    def reason(self, value: object) -> None:
        if isinstance(value, str) and value and value not in self.finish:
            self.finish.append(value)

    def usage(self, inputs: object, outputs: object) -> None:
        """Token counts (a later report of a stream replaces an earlier one)."""
        if _count(inputs):
            self.input_tokens = inputs  # type: ignore[assignment]
        if _count(outputs):
            self.output_tokens = outputs  # type: ignore[assignment]

    def cache(self, read: object, write: object) -> None:
        """Prompt-cache token counts: read from the cache, and written to it (``cache_creation`` in older names)."""
        if _count(read):
            self.cache_read = read  # type: ignore[assignment]
        if _count(write):
            self.cache_write = write  # type: ignore[assignment]

    def attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if self.model:
            attrs[A.GEN_AI_RESPONSE_MODEL] = self.model
        if self.response_id:
            attrs[A.GEN_AI_RESPONSE_ID] = self.response_id
        if self.finish:
            attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = list(self.finish)
        if self.input_tokens is not None:
            attrs[A.GEN_AI_USAGE_INPUT_TOKENS] = self.input_tokens
        if self.output_tokens is not None:
            attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] = self.output_tokens
        if self.cache_read is not None:
            attrs[A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = self.cache_read
        if self.cache_write is not None:
            attrs[A.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] = self.cache_write
        return attrs


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


Reader = Callable[[Facts, Mapping[str, Any]], None]
"""A provider's reader: what one response body (or one stream event's JSON) says."""


def payloads(result: dict[str, Any]) -> Iterator[Any]:
    """The JSON payloads of a recorded response: its body, or each event's in its framing."""
    if isinstance(result.get("events"), list):
        yield from event_payloads(result)
    elif "body" in result:
        yield result["body"]


def result_attributes(reader: Reader) -> Callable[[Any], Mapping[str, Any]]:
    """The ``ToolSpec.result_attributes`` of a route read by ``reader``."""

    def attributes(result: Any) -> Mapping[str, Any]:
        facts = Facts()
        if isinstance(result, dict):
            for payload in payloads(result):
                if isinstance(payload, Mapping):
                    reader(facts, payload)
        return facts.attributes()

    return attributes


def call_attributes(streams: Callable[[Mapping[str, Any]], bool]) -> Callable[[Any], Mapping[str, Any]]:
    """The ``ToolSpec.call_attributes`` of a route: whether the request streams."""

    def attributes(args: Any) -> Mapping[str, Any]:
        return {A.GEN_AI_REQUEST_STREAM: isinstance(args, Mapping) and streams(args)}

    return attributes


def body_streams(args: Mapping[str, Any]) -> bool:
    """The usual rule: the body says ``"stream": true``."""
    return args.get("stream") is True


def common_reader(facts: Facts, obj: Mapping[str, Any]) -> None:
    """The fields OpenAI-compatible APIs and Anthropic share (``model``, ``id``, ``usage``), the finish
    reasons of both, and the message or response a stream event nests; the reader of a route that
    names none."""
    for inner in (obj.get("message"), obj.get("response")):
        if isinstance(inner, Mapping):
            common_reader(facts, inner)
    facts.set_model(obj.get("model"))
    facts.set_id(obj.get("id"))
    for choice in obj.get("choices") or ():
        if isinstance(choice, Mapping):
            facts.reason(choice.get("finish_reason"))
    for holder in (obj, obj.get("delta")):
        if isinstance(holder, Mapping):
            facts.reason(holder.get("stop_reason"))
    if obj.get("object") == "response":
        facts.reason(obj.get("status"))
    usage = obj.get("usage")
    if isinstance(usage, Mapping):
        facts.usage(_first(usage, "input_tokens", "prompt_tokens"), _first(usage, "output_tokens", "completion_tokens"))
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
        facts.cache(_first(usage, "cache_read_input_tokens") or cached, _first(usage, "cache_creation_input_tokens"))


def _first(usage: Mapping[str, Any], *names: str) -> object:
    for name in names:
        if _count(usage.get(name)):
            return usage.get(name)
    return None
