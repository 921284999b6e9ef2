"""Each field of ``ReplayOptions`` checked and normalised on its own: ``__post_init__`` runs them all,
``ReplayOptions.replace`` only those of the fields it changes (a replay's start copies the options once per
test, and the other fields are already checked)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from otel_agent_replay.capture import Redactor
from otel_agent_replay.capture import expand as _expand
from otel_agent_replay.core import (
    DECLARABLE_SIDE_EFFECTS,
    ConfigurationError,
    DriftPolicy,
    MissPolicy,
    ModelPolicy,
    NetworkPolicy,
    OutsidePolicy,
    Pace,
    RecordMode,
    SideEffect,
    SideEffectPolicy,
    StalePolicy,
    Then,
    choice,
    lock_timeout_seconds,
)
from otel_agent_replay.instrumentation import positive_seconds
from otel_agent_replay.integrations import HttpRoute, mcp_side_effect_rules, side_effect_rules

from ._messages import Hints

__all__ = ["NORMALISE", "expand_paths"]


def expand_paths(paths: Any) -> tuple[str, ...]:
    """A tool's key_ignore paths as a tuple (one string is one path; the preset token expanded)."""
    return _expand((paths,) if isinstance(paths, str) else paths)


_put = object.__setattr__


def _chosen(name: str, kind: type[Any]) -> Callable[[Any], None]:
    def normalise(options: Any) -> None:
        _put(options, name, choice(kind, getattr(options, name), "replay", name))

    return normalise


def _stub(options: Any) -> None:
    _put(options, "stub", frozenset((options.stub,) if isinstance(options.stub, str) else options.stub))


def _frozen_mapping(name: str) -> Callable[[Any], None]:
    def normalise(options: Any) -> None:
        _put(options, name, MappingProxyType(dict(getattr(options, name))))

    return normalise


def _declare(options: Any) -> None:
    declared: dict[str, SideEffect] = {}
    for name, effect in options.declare.items():
        if effect not in DECLARABLE_SIDE_EFFECTS:
            spellings = ", ".join(repr(e.value) for e in DECLARABLE_SIDE_EFFECTS)
            raise ConfigurationError(f"replay(declare={{{name!r}: {effect!r}}}): use one of {spellings}")
        declared[name] = SideEffect(effect)
    _put(options, "declare", MappingProxyType(declared))


def _max_age(options: Any) -> None:
    _put(options, "max_age", positive_seconds(options.max_age, "max_age"))


def _hints(options: Any) -> None:
    if not isinstance(options.hints, Hints):
        raise ConfigurationError(f"replay(hints={options.hints!r}): give a Hints")


def _key_ignore(options: Any) -> None:
    if not isinstance(options.key_ignore, Mapping):
        raise ConfigurationError(f"replay(key_ignore={options.key_ignore!r}): give a mapping of tool → paths")
    _put(options, "key_ignore", MappingProxyType({k: expand_paths(v) for k, v in options.key_ignore.items()}))


def _allow_hosts(options: Any) -> None:
    if options.allow_hosts is not None:
        given = options.allow_hosts
        hosts = (given,) if isinstance(given, str) else tuple(given)
        if not all(isinstance(h, str) and h for h in hosts):
            raise ConfigurationError(f"replay(allow_hosts={given!r}): give host names or addresses")
        _put(options, "allow_hosts", hosts)


def _allow_sockets(options: Any) -> None:
    if options.allow_sockets is not None:
        sockets = options.allow_sockets
        given = (sockets,) if isinstance(sockets, (str, os.PathLike)) else sockets
        paths = tuple(os.fspath(p) if isinstance(p, os.PathLike) else p for p in given)
        if not all(isinstance(p, str) and p for p in paths):
            raise ConfigurationError(
                f"replay(allow_sockets={sockets!r}): give UNIX-domain socket paths, such as "
                "allow_sockets=['/var/run/postgresql/.s.PGSQL.5432']"
            )
        _put(options, "allow_sockets", paths)


def _redactor(options: Any) -> None:
    if not isinstance(options.redactor, Redactor):
        raise ConfigurationError(f"replay(redactor={options.redactor!r}): give a Redactor")


def _edit(options: Any) -> None:
    if not isinstance(options.edit, Mapping):
        raise ConfigurationError(f"replay(edit={options.edit!r}): give a mapping of step id → value or exception")
    _put(options, "edit", MappingProxyType(dict(options.edit)))


def _http_side_effects(options: Any) -> None:
    _put(options, "http_side_effects", MappingProxyType(dict(side_effect_rules(options.http_side_effects))))


def _mcp_side_effects(options: Any) -> None:
    _put(options, "mcp_side_effects", MappingProxyType(dict(mcp_side_effect_rules(options.mcp_side_effects))))


def _passthrough(options: Any) -> None:
    given = options.passthrough
    hosts = (given,) if isinstance(given, str) else tuple(given)
    if not all(isinstance(h, str) and h for h in hosts):
        raise ConfigurationError(f"replay(passthrough={given!r}): give hosts, as 'host' or 'host:port'")
    _put(options, "passthrough", frozenset(h.lower() for h in hosts))


def _http_routes(options: Any) -> None:
    _put(options, "http_routes", tuple(options.http_routes))
    for route in options.http_routes:
        if not isinstance(route, HttpRoute):
            raise ConfigurationError(f"replay(http_routes=[..., {route!r}]): give HttpRoute values")


def _lock_timeout(options: Any) -> None:
    _put(options, "lock_timeout", lock_timeout_seconds(options.lock_timeout, "replay"))


def _as_given(options: Any) -> None:
    """A field kept as given (ids, flags, the fork tape's path)."""


NORMALISE: dict[str, Callable[[Any], None]] = {
    "mode": _chosen("mode", RecordMode),
    "side_effects": _chosen("side_effects", SideEffectPolicy),
    "models": _chosen("models", ModelPolicy),
    "stale_versions": _chosen("stale_versions", StalePolicy),
    "on_miss": _chosen("on_miss", MissPolicy),
    "on_drift": _chosen("on_drift", DriftPolicy),
    "outside_calls": _chosen("outside_calls", OutsidePolicy),
    "stub": _stub,
    "fallbacks": _frozen_mapping("fallbacks"),
    "overrides": _frozen_mapping("overrides"),
    "declare": _declare,
    "max_age": _max_age,
    "hints": _hints,
    "pace": _chosen("pace", Pace),
    "key_ignore": _key_ignore,
    "network": _chosen("network", NetworkPolicy),
    "allow_hosts": _allow_hosts,
    "allow_sockets": _allow_sockets,
    "redactor": _redactor,
    "then": _chosen("then", Then),
    "edit": _edit,
    "http_side_effects": _http_side_effects,
    "mcp_side_effects": _mcp_side_effects,
    "passthrough": _passthrough,
    "http_routes": _http_routes,
    "lock_timeout": _lock_timeout,
    "run_id": _as_given,
    "trace_id": _as_given,
    "allow_unused": _as_given,
    "spans": _as_given,
    "http": _as_given,
    "http_models": _as_given,
    "fork_tape": _as_given,
}
"""Every field's check, in the order ``__post_init__`` runs them (a test keeps it in step with the fields)."""
