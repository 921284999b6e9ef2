"""The pytest plugin (entry point ``pytest11``): each test records or replays its own tape."""

from __future__ import annotations

from ._plugin import agent_tape, pytest_addoption, pytest_configure, pytest_runtest_call, safe_name

__all__ = ["agent_tape", "pytest_addoption", "pytest_configure", "pytest_runtest_call", "safe_name"]
