"""What a decorated tool or model function declared: ``ToolSpec`` and its checks."""

from __future__ import annotations

import collections.abc as cabc
import datetime as _dt
import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from otel_agent_replay.capture import DEFAULT_REDACTOR, Binder, context_parameters, expand, make_binder
from otel_agent_replay.core import (
    DECLARABLE_SIDE_EFFECTS,
    ConfigurationError,
    SideEffect,
    SideEffectName,
    StepKind,
    choice,
)

SPEC_ATTRIBUTE = "__agent_replay_tool__"


_NO_FACTS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a decorated tool or model function declared."""

    name: str
    kind: StepKind
    side_effect: SideEffect | None
    """What the tool declared (None: nothing; treated as not read-only)."""
    version: str | None
    ttl: float | None
    ignore: frozenset[str]
    leave_out: frozenset[str]
    signature: inspect.Signature
    is_async: bool
    provider: str | None = None
    model: str | None = None
    receiver: str | None = None
    """The parameter that carries the object a method is called on (``self``), for its target."""
    result_type: Any = None
    """The type results are rebuilt as at replay (``result_type=``); None: the return annotation."""
    key_ignore: tuple[str, ...] = ()
    """Argument paths left out of the call key (``key_ignore=``; the tape keeps them)."""
    stream: str | None = None
    """``sync`` or ``async`` for a generator or async-generator function (one step, chunk by chunk)."""
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """The decorated function, for its return annotation."""
    result_attributes: Callable[[Any], Mapping[str, Any]] | None = field(default=None, compare=False, repr=False)
    """What a result says for its step's span, recorded or replayed alike (an HTTP model step: the
    response's model, id, finish reasons and token usage)."""
    call_attributes: Callable[[Any], Mapping[str, Any]] | None = field(default=None, compare=False, repr=False)
    """What a call's captured arguments say for its step's span at its start, recorded or replayed alike
    (an HTTP step: method, server and path; a model route: whether it streams)."""
    model_argument: str = "model"
    """The argument that names the model of a model step (a Gemini or Bedrock route: the URL's model)."""
    operation: str | None = None
    """A model step's ``gen_ai.operation.name`` when it is not ``chat`` (``embeddings``)."""
    vouched: bool = True
    """Whether code or the live world says ``side_effect`` (False: only a tape's text does, as for an MCP
    tool listed read-only by a tape with no live server to ask; served from the tape, never run live)."""
    binder: Binder = field(init=False, compare=False, repr=False)
    """Binds a call to the signature (see ``capture.make_binder``); made from the fields above."""
    # Derived once, so the step path compares a bool and writes plain strings (an enum's class
    # attribute costs ~50 ns a lookup, ``.value`` ~80 ns).
    is_llm: bool = field(init=False, compare=False, repr=False)
    """True for a model call."""
    kind_value: str = field(init=False, compare=False, repr=False)
    """``kind`` as the plain string the span carries."""
    side_effect_value: str = field(init=False, compare=False, repr=False)
    """The ``agent_replay.side_effect`` every step carries: the declaration, ``undeclared`` spelled
    out, and ``read_only`` for a model step that declared nothing."""

    _hint: list[Any] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "_hint", [])
        put(self, "binder", make_binder(self.signature, self.leave_out))
        put(self, "is_llm", self.kind == StepKind.LLM)
        put(self, "kind_value", self.kind.value)
        if self.side_effect is not None:
            effect = self.side_effect.value
        else:
            effect = SideEffect.READ_ONLY.value if self.is_llm else SideEffect.UNDECLARED.value
        put(self, "side_effect_value", effect)

    def result_facts(self, result: object) -> Mapping[str, Any]:
        """What ``result_attributes`` reads from ``result`` (an HTTP step's status, a model response's model and
        usage), empty when the spec reads nothing or the reading fails: the facts are extras, never worth losing
        the step, its span or a counter for."""
        read = self.result_attributes
        if read is None:
            return _NO_FACTS
        try:
            return dict(read(result))  # (a reader that gives back no mapping fails here, not in the caller)
        except Exception:
            return _NO_FACTS

    def result_hint(self) -> Any:
        """The type a result (a stream: each chunk) is rebuilt as: ``result_type``, else the return annotation.

        Read when first needed (annotations may name classes defined after the decorator ran);
        None when there is neither or the annotation cannot be resolved.
        """
        if self._hint:
            return self._hint[0]
        hint = self.result_type
        if hint is None and self.function is not None:
            try:
                hint = typing.get_type_hints(self.function).get("return")
            except Exception:
                hint = None
            if hint is not None and self.stream is not None:
                hint = _chunk_type(hint)
        self._hint.append(hint)
        return hint

    @property
    def read_only(self) -> bool:
        """True only for tools that declared ``side_effect="read_only"``."""
        return self.side_effect == SideEffect.READ_ONLY


_STREAMS = (
    cabc.Iterator,
    cabc.Iterable,
    cabc.Generator,
    cabc.AsyncIterator,
    cabc.AsyncIterable,
    cabc.AsyncGenerator,
)


def _chunk_type(hint: Any) -> Any:
    """``Iterator[T]``, ``Generator[T, ...]``, ``AsyncIterator[T]`` … → ``T``; anything else → None."""
    if typing.get_origin(hint) in _STREAMS:
        args = typing.get_args(hint)
        return args[0] if args else None
    return None


def tool_spec(fn: object) -> ToolSpec | None:
    """The spec of a function decorated with ``@tool`` or ``@model_call``, else None."""
    spec = getattr(fn, SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, ToolSpec) else None


def positive_seconds(value: float | _dt.timedelta | None, option: str) -> float | None:
    """A duration option (seconds or a timedelta) as seconds; ``ConfigurationError`` unless positive."""
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, _dt.timedelta) else float(value)
    if seconds <= 0:
        raise ConfigurationError(f"{option} must be positive, got {value!r}; give seconds or a timedelta")
    return seconds


def make_spec(
    fn: Callable[..., Any],
    *,
    name: str | None,
    kind: StepKind,
    side_effect: SideEffect | SideEffectName | None,
    version: str | None,
    ttl: float | _dt.timedelta | None,
    ignore: Iterable[str],
    provider: str | None = None,
    model: str | None = None,
    result_type: Any = None,
    key_ignore: Iterable[str] = (),
) -> ToolSpec:
    """Check a tool's declaration and build its spec (``ConfigurationError`` when invalid)."""
    if not callable(fn):
        raise ConfigurationError(f"@{'tool' if kind == StepKind.TOOL else 'model_call'} needs a function, got {fn!r}")
    # A partial has no name of its own: it is named by its function.
    named: Any = fn if hasattr(fn, "__qualname__") else getattr(fn, "func", fn)
    qualname = getattr(named, "__qualname__", None) or type(fn).__qualname__
    declared = None
    if side_effect is not None:
        where = f"@tool on {qualname!r}"
        declared = choice(SideEffect, side_effect, where, "side_effect", allowed=DECLARABLE_SIDE_EFFECTS)
    signature = inspect.signature(fn)
    ignored = frozenset([ignore] if isinstance(ignore, str) else ignore)
    unknown = ignored - set(signature.parameters)
    if unknown:
        raise ConfigurationError(
            f"{qualname}: ignore= names {sorted(unknown)} that are not parameters "
            f"(parameters: {list(signature.parameters)})"
        )
    is_method = "." in qualname.rsplit("<locals>.", 1)[-1]
    leave_out = context_parameters(signature, is_method=is_method) | ignored
    params = list(signature.parameters)
    # The name reaches the span name, gen_ai.tool.name, step_id and the call key: redact it once, here.
    redact = DEFAULT_REDACTOR.redact_text
    return ToolSpec(
        name=redact(name or getattr(named, "__name__", None) or type(fn).__name__),
        kind=kind,
        side_effect=declared,
        version=version,
        ttl=positive_seconds(ttl, "ttl"),
        ignore=ignored,
        leave_out=leave_out,
        signature=signature,
        is_async=inspect.iscoroutinefunction(fn),
        provider=redact(provider) if provider else provider,
        model=redact(model) if model else model,
        receiver=params[0] if is_method and params and params[0] == "self" else None,
        result_type=result_type,
        key_ignore=expand((key_ignore,) if isinstance(key_ignore, str) else key_ignore),
        stream="sync" if inspect.isgeneratorfunction(fn) else "async" if inspect.isasyncgenfunction(fn) else None,
        function=fn,
    )
