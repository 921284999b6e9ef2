"""The pytest plugin (entry point ``pytest11``): each test records or replays its own tape."""

from __future__ import annotations

from ._plugin import (
    PytestHints,
    agent_tape,
    pytest_addoption,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_makereport,
    safe_name,
)

__all__ = [
    "PytestHints",
    "agent_tape",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "safe_name",
]
