"""GenAI attributes read from a model route's request and response bodies (any provider's shape)."""

from __future__ import annotations

from typing import Any

from otel_agent_replay.core import attributes as A

from ._wire import event_data


def request_attributes(body: dict[str, Any]) -> dict[str, Any]:
    """What the request says: whether it streams."""
    return {A.GEN_AI_REQUEST_STREAM: body.get("stream") is True}


class _Facts:
    def __init__(self) -> None:
        self.model: str | None = None
        self.response_id: str | None = None
        self.finish: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def read(self, obj: object) -> None:
        if not isinstance(obj, dict):
            return
        # Streams nest the message (anthropic ``message_start``) or the response (``response.completed``).
        for inner in (obj.get("message"), obj.get("response")):
            if isinstance(inner, dict):
                self.read(inner)
        model, rid = obj.get("model"), obj.get("id")
        if isinstance(model, str) and model:
            self.model = model
        if isinstance(rid, str) and rid and self.response_id is None:
            self.response_id = rid
        for choice in obj.get("choices") or ():
            if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
                self._reason(choice["finish_reason"])
        for holder in (obj, obj.get("delta")):
            if isinstance(holder, dict) and isinstance(holder.get("stop_reason"), str):
                self._reason(holder["stop_reason"])
        if obj.get("object") == "response" and isinstance(obj.get("status"), str):
            self._reason(obj["status"])
        usage = obj.get("usage")
        if isinstance(usage, dict):
            inp = _int(usage, "input_tokens", "prompt_tokens")
            out = _int(usage, "output_tokens", "completion_tokens")
            if inp is not None:
                self.input_tokens = inp
            if out is not None:
                self.output_tokens = out

    def _reason(self, reason: str) -> None:
        if reason not in self.finish:
            self.finish.append(reason)


def _int(usage: dict[str, Any], *names: str) -> int | None:
    for name in names:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def response_attributes(result: dict[str, Any]) -> dict[str, Any]:
    """What the response says: model, id, finish reasons and token usage (streamed usage too)."""
    facts = _Facts()
    if "events" in result:
        for data in event_data(result):
            facts.read(data)
    else:
        facts.read(result.get("body"))
    attrs: dict[str, Any] = {}
    if facts.model:
        attrs[A.GEN_AI_RESPONSE_MODEL] = facts.model
    if facts.response_id:
        attrs[A.GEN_AI_RESPONSE_ID] = facts.response_id
    if facts.finish:
        attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = facts.finish
    if facts.input_tokens is not None:
        attrs[A.GEN_AI_USAGE_INPUT_TOKENS] = facts.input_tokens
    if facts.output_tokens is not None:
        attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] = facts.output_tokens
    return attrs
