"""The ``otel-agent-replay`` command: the only subpackage that prints."""

from __future__ import annotations

from ._entry import main

__all__ = ["main"]
