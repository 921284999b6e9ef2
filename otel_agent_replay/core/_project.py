"""Project-wide settings: the ``[tool.otel-agent-replay]`` table of the nearest ``pyproject.toml``.

```toml
[tool.otel-agent-replay]
tapes_dir = "tests/tapes"             # the pytest plugin's tapes folder (relative to the file)
allow_hosts = ["127.0.0.1"]           # the network guard's default (absent: loopback)
stub = ["send_invoice"]               # tools whose recorded results are served without running them
compare_ignore = ["*.latency_ms"]     # paths compare's default policy ignores too

[tool.otel-agent-replay.key_ignore]   # per tool ("*": every tool), paths left out of call keys
chat = ["@model_volatile", "messages[0].content"]
```

The file is read when a recording or replay starts (cached while it does not change), so a key
rule changed here takes effect on the next replay, with no re-recording.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ._errors import ConfigurationError

TABLE = "otel-agent-replay"


@dataclass(frozen=True)
class ProjectSettings:
    """The ``[tool.otel-agent-replay]`` settings (empty when there is no such table)."""

    path: Path | None = None
    """The ``pyproject.toml`` they come from."""
    tapes_dir: Path | None = None
    allow_hosts: tuple[str, ...] | None = None
    stub: tuple[str, ...] = ()
    compare_ignore: tuple[str, ...] = ()
    key_ignore: MappingProxyType[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))


_cache: dict[Path, tuple[int, ProjectSettings]] = {}
_lock = threading.Lock()
EMPTY = ProjectSettings()


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` from ``start`` (default: the working folder) upwards."""
    found = _nearest(os.path.realpath(start if start is not None else os.getcwd()))
    return None if found is None else Path(found)


def _nearest(folder: str) -> str | None:
    """The nearest ``pyproject.toml`` that is a file, from the resolved ``folder`` upwards (``os.path``, not
    ``pathlib``: this runs at the start of every replay and every recording, and pathlib's objects cost more
    than the stats it makes)."""
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def project_settings(start: Path | None = None) -> ProjectSettings:
    """The settings of the nearest ``pyproject.toml`` (``ConfigurationError`` naming the file and key when wrong).

    ``AGENT_REPLAY_PYPROJECT`` names the file instead (empty: none).
    """
    given = os.environ.get("AGENT_REPLAY_PYPROJECT")
    if given is not None:
        name = given or None
    else:
        name = _nearest(os.path.realpath(start if start is not None else os.getcwd()))
    if name is None:
        return EMPTY
    try:
        info = os.stat(name)
    except OSError:
        return EMPTY
    if not stat.S_ISREG(info.st_mode):
        return EMPTY
    path = Path(name)
    mtime = info.st_mtime_ns
    with _lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
    settings = _read(path)
    with _lock:
        _cache[path] = (mtime, settings)
    return settings


def _strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{path}: [tool.{TABLE}] {key} must be a list of strings, got {value!r}")
    return tuple(value)


def _read(path: Path) -> ProjectSettings:
    # imported here: the TOML parser costs every import of the package, and few processes read a pyproject.toml
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{path}: cannot read it as TOML ({exc})") from exc
    table = data.get("tool", {}).get(TABLE)
    if table is None:
        return ProjectSettings(path=path)
    if not isinstance(table, dict):
        raise ConfigurationError(f"{path}: [tool.{TABLE}] must be a table")
    known = {"tapes_dir", "allow_hosts", "stub", "compare_ignore", "key_ignore"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigurationError(f"{path}: [tool.{TABLE}] has unknown settings {unknown}; known: {sorted(known)}")
    tapes = table.get("tapes_dir")
    if tapes is not None and not isinstance(tapes, str):
        raise ConfigurationError(f"{path}: [tool.{TABLE}] tapes_dir must be a path string, got {tapes!r}")
    keys = table.get("key_ignore", {})
    if not isinstance(keys, dict):
        raise ConfigurationError(f"{path}: [tool.{TABLE}.key_ignore] must be a table of tool = [paths]")
    return ProjectSettings(
        path=path,
        tapes_dir=(path.parent / tapes) if tapes else None,
        allow_hosts=_strings(path, "allow_hosts", table["allow_hosts"]) if "allow_hosts" in table else None,
        stub=_strings(path, "stub", table.get("stub", [])),
        compare_ignore=_strings(path, "compare_ignore", table.get("compare_ignore", [])),
        key_ignore=MappingProxyType(
            {str(tool): _strings(path, f"key_ignore.{tool}", paths) for tool, paths in keys.items()}
        ),
    )
