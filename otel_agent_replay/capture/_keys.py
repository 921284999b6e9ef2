"""Match rules: paths left out of a tool's call key (``key_ignore``).

A rule is a path pattern in the syntax of ``compare``'s ``Policy``: dotted keys and ``[n]``
indexes (``messages[0].content``), fnmatch wildcards (``*`` matches anything, dots included),
and ``[*]`` for any index (``messages[*].tool_call_id``). Paths are relative to the arguments;
an ``args.`` prefix is accepted. The token ``@model_volatile`` stands for ``VOLATILE_MODEL_FIELDS``.

The arguments on the tape keep every field: only the call key is computed without the ignored
paths, so a rule can change at replay without re-recording (keys are recomputed from the
recorded arguments with the rules in force).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ._canonical import JSONValue, dumps_canonical, key_from_json

VOLATILE_MODEL_FIELDS: tuple[str, ...] = (
    "user",
    "request_id",
    "*.request_id",
    "metadata.user_id",
    # OpenAI chat (and Cohere, Mistral …): the ids of tool calls minted per call, and their echoes
    "messages[*].tool_call_id",
    "messages[*].tool_calls[*].id",
    # OpenAI responses: item ids and call ids echoed back as input, the previous response's id
    "input[*].id",
    "input[*].call_id",
    "previous_response_id",
    # Anthropic (also inside Bedrock's invoke): `toolu_` ids of tool_use blocks and the tool_use_id echoing them
    "messages[*].content[*].id",
    "messages[*].content[*].tool_use_id",
    # Bedrock converse: toolUseId of a toolUse and of the toolResult that answers it
    "messages[*].content[*].toolUse.toolUseId",
    "messages[*].content[*].toolResult.toolUseId",
    # Gemini: the optional ids of function calls and responses
    "contents[*].parts[*].functionCall.id",
    "contents[*].parts[*].functionResponse.id",
    "created",
    "system_fingerprint",
)
"""The volatile fields of the model routes' requests: the end user, request ids, the tool-call and
tool-use ids minted per call and echoed back in later requests, the previous response's id,
``created`` and ``system_fingerprint`` (echoed back by some clients)."""

VOLATILE_MODEL_RESULT_FIELDS: tuple[str, ...] = (
    "id",
    "responseId",
    "generation_id",
    "created",
    "created_at",
    "createTime",
    "system_fingerprint",
    "service_tier",
    "previous_response_id",
    # minted tool-call and tool-use ids in an answer
    "choices[*].message.tool_calls[*].id",
    "output[*].id",
    "output[*].call_id",
    "output[*].content[*].id",
    "content[*].id",
    "message.tool_calls[*].id",
    "output.message.content[*].toolUse.toolUseId",
    "candidates[*].content.parts[*].functionCall.id",
    # timings
    "metrics",
    "*_duration",
    "usage",
)
"""The volatile fields of a model's answer (the body of an HTTP model step, or a decorated model
function's result): response and tool-call ids minted per call, creation times, the backend's
fingerprint and tier, timings, and token usage (which a provider may count differently for one answer)."""

VOLATILE_RESPONSE_HEADERS: tuple[str, ...] = (
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "openai-processing-ms",
    "x-ratelimit-*",
    "anthropic-ratelimit-*",
)
"""Kept response headers whose values change with every call (request ids, timings, rate-limit counters)."""

PRESET_TOKEN = "@model_volatile"

_INDEX = re.compile(r"\[(\*|\d+)\]")


def expand(patterns: Iterable[str]) -> tuple[str, ...]:
    """Patterns with the preset token expanded and an ``args.`` prefix dropped, deduplicated, in order."""
    out: list[str] = []
    for pattern in patterns:
        for p in VOLATILE_MODEL_FIELDS if pattern == PRESET_TOKEN else (pattern,):
            p = p[5:] if p.startswith("args.") else p
            if p and p not in out:
                out.append(p)
    return tuple(out)


def _compiled(pattern: str) -> re.Pattern[str]:
    # ``[n]`` and ``[*]`` are indexes, not fnmatch character classes.
    escaped = _INDEX.sub(lambda m: "[[]" + m.group(1) + "[]]", pattern)
    return re.compile(fnmatch.translate(escaped))


class KeyRules:
    """The key rules in force: per tool, the paths left out of its call key."""

    __slots__ = ("by_tool",)

    def __init__(self, by_tool: Mapping[str, Iterable[str]] | None = None) -> None:
        merged: dict[str, tuple[str, ...]] = {}
        for tool, patterns in (by_tool or {}).items():
            given = (patterns,) if isinstance(patterns, str) else tuple(patterns)
            merged[tool] = expand(merged.get(tool, ()) + given)
        self.by_tool: Mapping[str, tuple[str, ...]] = merged

    def __bool__(self) -> bool:
        return bool(self.by_tool)

    def merged(self, other: Mapping[str, Iterable[str]] | KeyRules | None) -> KeyRules:
        """These rules and ``other``'s, tool by tool."""
        extra = other.by_tool if isinstance(other, KeyRules) else (other or {})
        combined: dict[str, tuple[str, ...]] = dict(self.by_tool)
        for tool, patterns in extra.items():
            given = (patterns,) if isinstance(patterns, str) else tuple(patterns)
            combined[tool] = combined.get(tool, ()) + given
        return KeyRules(combined)

    def for_tool(self, tool: str, declared: Iterable[str] = ()) -> tuple[str, ...]:
        """The patterns for one tool: the tool's own (``tool(key_ignore=)``), then these rules' (and ``*``'s)."""
        return expand((*declared, *self.by_tool.get("*", ()), *self.by_tool.get(tool, ())))

    def key(self, tool: str, value: JSONValue, patterns: tuple[str, ...]) -> str:
        """The call key of canonical argument data with the paths matching ``patterns`` left out."""
        return key_from_json(tool, dumps_canonical(_without(value, "", _compiled_all(patterns))))


def _without(value: Any, path: str, rule: re.Pattern[str] | None) -> Any:
    if rule is None:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if not rule.match(sub):
                out[k] = _without(v, sub, rule)
        return out
    if isinstance(value, list):
        kept = []
        for n, v in enumerate(value):
            sub = f"{path}[{n}]"
            if not rule.match(sub):
                kept.append(_without(v, sub, rule))
        return kept
    return value


@functools.lru_cache(maxsize=256)
def _compiled_all(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """All patterns as one alternation: one match per path instead of one per pattern."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{_compiled(p).pattern})" for p in patterns))


def without(value: Any, patterns: tuple[str, ...]) -> Any:
    """``value`` with every path matching one of ``patterns`` (this module's path syntax) left out."""
    return _without(value, "", _compiled_all(patterns))


NO_RULES = KeyRules()
