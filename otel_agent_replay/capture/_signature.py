"""A call bound to its function's signature: the argument dict a step's key and the tape are made from.

Which parameters carry a framework's context object (or ``self``) rather than data, and the binding itself:
``bind_arguments`` (``Signature.bind``, defaults filled in, ``**kwargs`` spread) and ``make_binder``, the same
binding without ``Signature.bind`` for the usual call shapes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# Parameters that carry a framework's context object rather than data: by type name...
CONTEXT_TYPE_NAMES = frozenset(
    {
        "RunContext",  # pydantic-ai
        "RunContextWrapper",  # OpenAI Agents SDK
        "ToolContext",  # OpenAI Agents SDK
        "CallbackManagerForToolRun",  # LangChain
        "AsyncCallbackManagerForToolRun",  # LangChain
        "RunnableConfig",  # LangChain
        "Context",  # MCP servers
    }
)
# ...and by parameter name (framework conventions and per-run call ids).
CONTEXT_PARAM_NAMES = frozenset({"run_manager", "callbacks", "tool_call_id", "call_id"})


def _annotation_name(annotation: object) -> str:
    if isinstance(annotation, str):
        return annotation.split("[", 1)[0].rsplit(".", 1)[-1]
    origin = getattr(annotation, "__origin__", None)
    target = origin if origin is not None else annotation
    return getattr(target, "__name__", "")


def context_parameters(signature: inspect.Signature, *, is_method: bool) -> frozenset[str]:
    """Parameters that carry a framework's context object (or ``self``) rather than data."""
    names: set[str] = set()
    params = list(signature.parameters.values())
    if is_method and params and params[0].name in ("self", "cls"):
        names.add(params[0].name)
    for p in params:
        if p.name in CONTEXT_PARAM_NAMES or _annotation_name(p.annotation) in CONTEXT_TYPE_NAMES:
            names.add(p.name)
    return frozenset(names)


def bind_arguments(
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    leave_out: Iterable[str] = (),
) -> dict[str, Any]:
    """Bind a call to its signature: names for positional arguments, defaults filled in.

    ``**kwargs`` parameters are spread into the result so a keyword passed through them
    looks like any other argument; ``*args`` stays a list under its own name. Parameters
    in ``leave_out`` (context objects, ``ignore=``) are dropped. Raises ``TypeError``
    exactly as the call itself would.
    """
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    skip = set(leave_out)
    out: dict[str, Any] = {}
    params = signature.parameters
    for name, value in bound.arguments.items():
        if name in skip:
            continue
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            for k, v in value.items():
                if k not in skip:
                    out[k] = v
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                out[name] = list(value)
        else:
            out[name] = value
    return out


Binder = Callable[[tuple[Any, ...], Mapping[str, Any]], dict[str, Any]]


def make_binder(signature: inspect.Signature, leave_out: Iterable[str] = ()) -> Binder:
    """A function that binds calls to ``signature`` exactly as ``bind_arguments`` does, faster.

    For signatures made only of ordinary parameters (no ``*args``, ``**kwargs`` or
    positional-only ones) the common call shapes are bound without ``Signature.bind``;
    anything unusual (too many arguments, unknown or repeated keywords, a missing one)
    goes through ``bind_arguments``, which raises the call's own ``TypeError``.
    """
    skip = frozenset(leave_out)

    def slow(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        return bind_arguments(signature, args, kwargs, skip)

    params = list(signature.parameters.values())
    if len(params) == 1 and params[0].kind is inspect.Parameter.VAR_KEYWORD and params[0].name not in skip:

        def spread(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
            # ``(**body)`` (an HTTP step's, a model route's): keywords only, each one itself
            if args:
                return slow(args, kwargs)
            return {k: v for k, v in kwargs.items() if k not in skip}

        return spread
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if any(p.kind not in plain for p in params):
        return slow
    positional = tuple(p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    known = frozenset(p.name for p in params)
    empty = inspect.Parameter.empty
    order = tuple((p.name, p.default, p.name in skip) for p in params)

    def fast(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        if len(args) > len(positional):
            return slow(args, kwargs)
        given = dict(zip(positional, args, strict=False))
        for key, value in kwargs.items():
            if key in given or key not in known:
                return slow(args, kwargs)
            given[key] = value
        out: dict[str, Any] = {}
        for name, default, skipped in order:
            if name in given:
                value = given[name]
            elif default is not empty:
                value = default
            else:
                return slow(args, kwargs)  # a required argument is missing: the call's own TypeError
            if not skipped:
                out[name] = value
        return out

    return fast
