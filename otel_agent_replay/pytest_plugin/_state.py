"""What the plugin's entry point (``_hooks``) and its body (``_plugin``) share: the stash keys, a test's
replay state, tape file names. Like the entry point, it imports pytest and the standard library only."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from otel_agent_replay.replayer import ReplaySession, replay


@dataclass
class TapeState:
    """A test's running replay: its context, its session, the end-of-test checks, its tape lock."""

    context: replay
    session: ReplaySession
    checks: dict[str, bool]
    finished: bool = False
    lock: IO[str] | None = None


PACKAGE = "otel_agent_replay"
RECORD_MODES = ("none", "once", "new_episodes", "all")
"""The spellings of ``RecordMode`` (a test checks they agree), so that the option costs no import."""

STATE: pytest.StashKey[TapeState] = pytest.StashKey()
"""The running replay of a test that uses ``agent_tape`` (set by the fixture, ended after the body)."""
NOT_READY: pytest.StashKey[str] = pytest.StashKey()
"""Why the test's replay could not start (no tape, a stale tape): the test fails with it, not its setup."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_DOTS = re.compile(r"\.{2,}")
_MAX_NAME = 120


def safe_name(text: str) -> str:
    """A file name from a test name: unsafe characters replaced, long names cut and hashed."""
    name = _DOTS.sub("_", _UNSAFE.sub("_", text)).strip("._") or "test"
    if name != text or len(name) > _MAX_NAME:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
        name = f"{name[:_MAX_NAME]}-{digest}"
    return name
