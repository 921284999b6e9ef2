"""What a joined child and the block that started it say to each other about one decorated call.

The child (``_joined``) sends what its code declared (``spec_facts``) and the call's bound arguments as
canonical JSON; the parent (``_channel``) builds the same ``ToolSpec`` from those facts (``remote_spec``)
and serves the call in the block's context. Values travel as JSON with their type description, errors
as their class name, args and JSON-able attributes (``error_facts`` / ``rebuilt_error``), so each side
raises the other's exception as its own class when that class is loaded there. Messages are JSON
lines, one connection per call (``send`` / ``receive``).
"""

from __future__ import annotations

import contextvars
import inspect
import socket
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from otel_agent_replay.capture import describe, exception_facts, loaded_class, rebuild_exception_as, to_jsonable
from otel_agent_replay.core import RecordedToolError, SideEffect, StepKind
from otel_agent_replay.instrumentation import ToolSpec

JOIN_VARIABLE = "AGENT_REPLAY_JOIN"
"""The variable that carries a child's ticket (JSON) into a process started from a block."""


def spec_facts(spec: ToolSpec) -> dict[str, Any]:
    """What a decorated function declared, as JSON: all the parent needs to make the same step."""
    return {
        "name": spec.name,
        "kind": spec.kind.value,
        "side_effect": spec.side_effect.value if spec.side_effect is not None else None,
        "version": spec.version,
        "ttl": spec.ttl,
        "provider": spec.provider,
        "model": spec.model,
        "key_ignore": list(spec.key_ignore),
        "model_argument": spec.model_argument,
        "operation": spec.operation,
    }


def remote_spec(
    facts: Mapping[str, Any], names: tuple[str, ...], call_attributes: Callable[[Any], Mapping[str, Any]] | None
) -> ToolSpec:
    """The parent's spec of a child's decorated function: its declaration, and keyword parameters named as
    the child's bound arguments (already bound there, with what the key leaves out already left out)."""
    side_effect = facts.get("side_effect")
    ttl = facts.get("ttl")
    parameters = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in names]
    return ToolSpec(
        name=str(facts["name"]),
        kind=StepKind(str(facts["kind"])),
        side_effect=SideEffect(side_effect) if isinstance(side_effect, str) else None,
        version=facts.get("version"),
        ttl=float(ttl) if isinstance(ttl, (int, float)) else None,
        ignore=frozenset(),
        leave_out=frozenset(),
        signature=inspect.Signature(parameters),
        is_async=False,
        provider=facts.get("provider"),
        model=facts.get("model"),
        key_ignore=tuple(str(p) for p in facts.get("key_ignore") or ()),
        model_argument=str(facts.get("model_argument") or "model"),
        operation=facts.get("operation"),
        call_attributes=call_attributes,
    )


def value_facts(value: object) -> dict[str, Any]:
    """A value as JSON data with its type description (None for plain JSON)."""
    desc, _lossy = describe(value)
    return {"value": to_jsonable(value), "type": desc}


def error_facts(exc: BaseException) -> dict[str, Any]:
    """An exception as its class name, message, args and JSON-able attributes."""
    args, attrs = exception_facts(exc)
    cls = type(exc)
    return {"type": f"{cls.__module__}.{cls.__qualname__}", "message": str(exc), "args": args, "attrs": attrs}


def rebuilt_error(facts: Mapping[str, Any]) -> BaseException:
    """The exception ``error_facts`` described: its own class when it is loaded here (an
    ``AgentReplayError`` always is), else ``RecordedToolError`` with its type and message."""
    name = str(facts.get("type") or "Exception")
    message = str(facts.get("message") or "")
    target = loaded_class(name if "." in name else f"builtins.{name}")
    if isinstance(target, type) and issubclass(target, Exception):
        args = facts.get("args")
        attrs = facts.get("attrs")
        try:
            return rebuild_exception_as(
                target,
                list(args) if isinstance(args, list) else [message],
                dict(attrs) if isinstance(attrs, dict) else {},
            )
        except Exception:
            pass
    return RecordedToolError(name, message)


class Reader(Protocol):
    """What a message is read from (a socket's file)."""

    def readline(self, size: int = -1, /) -> bytes: ...


class Writer(Protocol):
    """What a message is written to (a socket's file)."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


def send(stream: Writer, message: Mapping[str, Any]) -> None:
    """One message: a JSON line, written outside the caller's context (the channel's traffic is not the
    agent's: a replay's network guard, which watches the replay's context, never sees it)."""
    contextvars.Context().run(_write, stream, orjson.dumps(message) + b"\n")


def _write(stream: Writer, data: bytes) -> None:
    stream.write(data)
    stream.flush()


def receive(stream: Reader) -> dict[str, Any]:
    """The next message; ``ConnectionError`` when the other side has gone."""
    line = contextvars.Context().run(stream.readline)
    if not line:
        raise ConnectionError("the other side closed the connection")
    message = orjson.loads(line)
    if not isinstance(message, dict):
        raise ConnectionError(f"not a message: {line[:200]!r}")
    return message


def connect(address: str, timeout: float | None = None) -> socket.socket:
    """A connection to the channel at ``host:port``."""
    host, _, port = address.rpartition(":")
    return contextvars.Context().run(socket.create_connection, (host, int(port)), timeout)
