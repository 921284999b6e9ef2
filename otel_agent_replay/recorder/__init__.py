"""The recorder: ``record(path)`` appends the runs started inside it to a tape, losslessly."""

from __future__ import annotations

from ._record import Recording, record

__all__ = ["Recording", "record"]
