"""A post-import hook: a capture point whose library is first imported inside a block is put in place as
that import finishes, as if the library had been imported before the block.

``watch(names, then)`` puts a finder at the front of ``sys.meta_path`` (while something is watched): for a
watched module it asks the finders after it for the module's spec and wraps the spec's loader, so that
``then(name)`` runs right after the module's own code has run, in whatever thread imports it. Nothing is
imported here: a library the user never imports is never loaded. ``watch`` returns what takes that watch
away; the finder leaves ``sys.meta_path`` with the last one. A ``then`` that raises is logged, never
raised into the user's import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_watched: dict[str, list[Callable[[str], None]]] = {}
"""Module name → what runs after its first import finishes (in watch order)."""


class _Loader(importlib.abc.Loader):
    """The module's own loader, with the watchers run after its ``exec_module``."""

    def __init__(self, inner: Any, then: tuple[Callable[[str], None], ...]) -> None:
        self._inner = inner
        self._then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._inner, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        for then in self._then:
            try:
                then(module.__name__)
            except Exception:  # a capture point that fails must not fail the user's import
                _log.warning("otel-agent-replay could not put its capture point on %s", module.__name__, exc_info=True)

    def __getattr__(self, name: str) -> Any:  # resource readers, get_source, is_package ...
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        then = _watched.get(fullname)
        if not then:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, tuple(then))
                return spec
        return None


_finder = _Finder()


def watch(names: frozenset[str] | set[str] | tuple[str, ...], then: Callable[[str], None]) -> Callable[[], None]:
    """Run ``then(name)`` when one of ``names`` (not yet imported) finishes its first import; the returned
    callable takes this watch away."""
    taken: list[str] = []
    with _lock:
        for name in names:
            if name not in sys.modules:
                _watched.setdefault(name, []).append(then)
                taken.append(name)
        if _watched and _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)

    def unwatch() -> None:
        with _lock:
            for name in taken:
                watchers = _watched.get(name, [])
                if then in watchers:
                    watchers.remove(then)
                if not watchers:
                    _watched.pop(name, None)
            taken.clear()
            if not _watched and _finder in sys.meta_path:
                sys.meta_path.remove(_finder)

    return unwatch


def watching() -> frozenset[str]:
    """The module names watched now."""
    with _lock:
        return frozenset(_watched)
