"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    """A fresh tape path in the test's temporary folder."""
    return tmp_path / "tapes" / "run.jsonl"


# The evidence-store fixtures: a PostgreSQL server for the session, and a store on each backend.
from helpers.pg_server import pg_server, store_location  # noqa: E402, F401
