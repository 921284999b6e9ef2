"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    """A fresh tape path in the test's temporary folder."""
    return tmp_path / "tapes" / "run.jsonl"
