"""recorder."""

from __future__ import annotations

from ._record import Recording, record

__all__ = ["Recording", "record"]
