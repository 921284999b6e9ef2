"""Turning the capture points on and off: ``activate()`` for a record or replay block.

The first activation patches every capture point whose library is imported (each client's ``patch``,
and MCP's); one whose library is not imported yet is patched as that library's first import finishes,
inside the block or in another thread while it runs (``_imports``): nothing is imported here, so a
library the user does not use is never loaded. Closing the last activation puts every original back
exactly. Activations nest and may overlap across threads (reference-counted under a lock); the newest
one's settings are in force.
"""

from __future__ import annotations

import fnmatch
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from otel_agent_replay.core import DECLARABLE_SIDE_EFFECTS, ConfigurationError, SideEffect, SideEffectName

from ._imports import watch
from ._mcp import patch_mcp, unpatch_mcp
from ._mcp_effects import mcp_side_effect_rules, rules_from
from ._mcp_transport import MODULES as MCP_MODULES
from ._mcp_transport import patch_transports
from ._routes import HttpRoute, routes_for
from .providers import DEFAULT_ROUTES

Restore = Callable[[], None]
"""Puts one patched attribute back."""

_READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """What one record or replay block asked of the capture points."""

    routes: tuple[HttpRoute, ...]
    side_effects: tuple[tuple[str, SideEffect], ...] = ()
    """``(pattern, side effect)``: a pattern is ``fnmatch`` text over ``{METHOD} {host}{path}``."""
    models: bool = True
    """Model routes are model steps (``http_models=False``: they are plain HTTP steps)."""
    mcp_side_effects: tuple[tuple[str, SideEffect], ...] = ()
    """``(pattern, side effect)``: a pattern is ``fnmatch`` text over ``server/tool`` (``mcp_side_effects=``)."""

    def side_effect(self, tool: str, method: str) -> SideEffect:
        """An HTTP step's side effect: the first ``http_side_effects=`` rule that matches, else by method."""
        for pattern, effect in self.side_effects:
            if fnmatch.fnmatchcase(tool, pattern):
                return effect
        return SideEffect.READ_ONLY if method in _READ_ONLY_METHODS else SideEffect.EXTERNAL


def side_effect_rules(rules: Mapping[str, SideEffect | SideEffectName] | None) -> tuple[tuple[str, SideEffect], ...]:
    """``http_side_effects=`` checked: pattern → a declarable side effect."""
    out: list[tuple[str, SideEffect]] = []
    for pattern, effect in (rules or {}).items():
        if not isinstance(pattern, str) or not pattern or effect not in DECLARABLE_SIDE_EFFECTS:
            spellings = ", ".join(repr(e.value) for e in DECLARABLE_SIDE_EFFECTS)
            raise ConfigurationError(
                f"http_side_effects={{{pattern!r}: {effect!r}}}: give 'METHOD host/path' patterns (fnmatch, such as "
                f"'POST api.example.com/v1/search*') mapped to one of {spellings}"
            )
        out.append((pattern, SideEffect(effect)))
    return tuple(out)


class HttpActivation:
    """One active block's claim on the capture points; ``close()`` releases it."""

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self.closed = False

    @property
    def routes(self) -> tuple[HttpRoute, ...]:
        """The model routes in force for this block."""
        return self.settings.routes

    def close(self) -> None:
        with _lock:
            if self.closed:
                return
            self.closed = True
            _active.remove(self)
            if not _active:
                _unpatch()
                if not _mcp_holders:
                    _unpatch_mcp()


_lock = threading.RLock()  # an import inside a patch may run the import hook's patch
_active: list[HttpActivation] = []
_restores: list[Restore] = []


@dataclass(frozen=True, slots=True)
class _Client:
    """One client's capture point: ``patch()`` once the modules it ``needs`` are all imported."""

    needs: tuple[str, ...]
    patch: Callable[[], list[Restore]]


_clients: list[_Client] = []
_patched: set[int] = set()
"""Which of ``_clients`` are patched now (by index)."""


def replace(owner: type, attr: str, make: Callable[[Any], Any]) -> Restore:
    """Set ``owner.attr`` to ``make(original)``, the original read from the class's own ``__dict__``;
    the returned callable puts that very object back (what every client's ``patch`` does per attribute)."""
    original = owner.__dict__[attr]
    setattr(owner, attr, make(original))

    def restore() -> None:
        setattr(owner, attr, original)

    return restore


def imported(name: str) -> ModuleType | None:
    """The module ``name`` if it is imported (a client's ``patch`` runs once its ``needs`` are)."""
    return sys.modules.get(name)


def register_client(patch: Callable[[], list[Restore]], needs: tuple[str, ...] = ()) -> None:
    """Add a client's capture point: ``patch()`` patches it and returns how to undo it, called in a block
    once every module of ``needs`` is imported (at the block's start, or as the last of them is imported)."""
    _clients.append(_Client(needs, patch))


def activate(
    http_routes: Iterable[HttpRoute] = (),
    *,
    http_models: bool = True,
    http_side_effects: Mapping[str, SideEffect | SideEffectName] | None = None,
    mcp_side_effects: Mapping[str, SideEffect | SideEffectName] | None = None,
) -> HttpActivation:
    """Patch the capture points (if not yet patched) for a record or replay block; ``close()`` the result."""
    routes = routes_for(http_routes, DEFAULT_ROUTES) if http_models else ()
    activation = HttpActivation(
        HttpSettings(routes, side_effect_rules(http_side_effects), http_models, mcp_side_effect_rules(mcp_side_effects))
    )
    with _lock:
        if not _active:
            _patch()
        _active.append(activation)
    return activation


def hold_mcp() -> Restore:
    """Patch MCP's capture points alone (if not yet patched), for a live ``conform`` call's gate; the
    returned callable lets go (the last holder of MCP, block or gate, puts the originals back)."""
    held = [True]
    with _lock:
        _mcp_holders.append(held)
        _patch_mcp()

    def release() -> None:
        with _lock:
            if held in _mcp_holders:
                _mcp_holders.remove(held)
            if not _mcp_holders and not _active:
                _unpatch_mcp()

    return release


def patched() -> bool:
    """True while some block holds the capture points patched."""
    with _lock:
        return bool(_restores or _mcp_restores)


def settings() -> HttpSettings | None:
    """The settings of the newest active block, or None when none is active."""
    active = _active
    return active[-1].settings if active else None


def _mcp_rules() -> tuple[tuple[str, SideEffect], ...]:
    active = _active
    return active[-1].settings.mcp_side_effects if active else ()


rules_from(_mcp_rules)


_mcp_holders: list[list[bool]] = []
_mcp_restores: list[Restore] = []


def _patch_mcp() -> None:
    """MCP's capture points for what of ``mcp`` is imported now; what is imported later, inside the block
    (or in another thread), is patched as its import finishes (``_imports``)."""
    if not _mcp_restores:
        _mcp_restores.append(unpatch_mcp)
        _mcp_restores.append(watch(MCP_MODULES, _imported))
    patch_mcp()
    _mcp_restores.extend(patch_transports())


def _imported(name: str) -> None:
    with _lock:
        if _mcp_restores:
            _patch_mcp()


def _unpatch_mcp() -> None:
    while _mcp_restores:
        _mcp_restores.pop()()


def _patch_clients(just_imported: str | None = None) -> None:
    """Patch each client whose modules are all imported now and that is not patched yet (``just_imported``:
    the module whose import is finishing, its code run)."""
    for index, client in enumerate(_clients):
        if index not in _patched and all(name == just_imported or _imported_whole(name) for name in client.needs):
            _patched.add(index)
            _restores.extend(client.patch())


def _imported_whole(name: str) -> bool:
    """Whether a module is imported and its code has run: ``urllib3.connectionpool`` imports
    ``urllib3.connection``, which finishes first while the pool's module is in ``sys.modules`` half made."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def _client_imported(name: str) -> None:
    with _lock:
        if _active:
            _patch_clients(name)


def _patch() -> None:
    _patch_mcp()
    _patch_clients()
    waiting = {name for index, c in enumerate(_clients) if index not in _patched for name in c.needs}
    if waiting:
        _restores.insert(0, watch(waiting, _client_imported))  # taken away last, after every patch


def _unpatch() -> None:
    while _restores:
        _restores.pop()()
    _patched.clear()
