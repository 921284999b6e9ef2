"""The pytest plugin (entry point ``pytest11``): each test records or replays its own tape.

Importing it imports pytest and ``_hooks`` only; the plugin's body (``_plugin``) and the SDK come in
when a test uses the ``agent_tape`` fixture or the ``agent_conform`` marker.
"""

from __future__ import annotations

from ._hooks import (
    agent_tape,
    pytest_addoption,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_makereport,
)
from ._state import safe_name

__all__ = [
    "agent_tape",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "safe_name",
]
