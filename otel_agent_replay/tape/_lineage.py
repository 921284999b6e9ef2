"""A forked run's lineage: which recording, run and step it left, and with which edits.

A replay that forks (``then=``, ``edit=``) writes its run to a tape of its own; the run span says where
it came from (``agent_replay.forked_from`` = ``{run_id}:{step_id}``, ``agent_replay.fork.tape``,
``agent_replay.fork.edit``, ``agent_replay.fork.diverged_at``). ``lineage(run)`` reads them back, so
``show``, ``diff``, the pages and the store name a fork the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import orjson

from otel_agent_replay.core import attributes as A

from ._values import Run

_SHOWN = 80


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a forked run came from."""

    run_id: str
    """The recorded run it was forked from."""
    step_id: str | None
    """The recorded step it left the recording at: the first edited step, else where it first diverged."""
    tape: str | None = None
    """The recording's tape, as the replay was given it."""
    edits: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Edited step id → what it answered instead (redacted JSON; an exception as ``{"raise": …}``)."""
    diverged_at: str | None = None
    """The recorded step where the live run first asked something else (after the edits), if it did."""

    def edit_text(self, limit: int = _SHOWN) -> str:
        """The edits as ``get_weather#1 = {"sky":"rainy"}`` (each value cut to ``limit`` characters)."""
        return "; ".join(f"{step} = {_short(value, limit)}" for step, value in self.edits.items())

    def __str__(self) -> str:
        text = f"fork of {self.tape or 'a recording'}, run {self.run_id}"
        if self.step_id:
            text += f", at step {self.step_id}"
        if self.edits:
            text += f", edit {self.edit_text()}"
        if self.diverged_at and self.diverged_at != self.step_id:
            text += f"; diverged at {self.diverged_at}"
        return text

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (``show --json``, ``diff --json``, the store's session ``extra``)."""
        return {
            "tape": self.tape,
            "run_id": self.run_id,
            "step_id": self.step_id,
            "edits": dict(self.edits),
            "diverged_at": self.diverged_at,
        }


def _short(value: Any, limit: int) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def lineage(run: Run) -> Lineage | None:
    """The run's lineage when it is a fork (its span says ``agent_replay.forked_from``), else None."""
    attrs = run.attributes
    forked = attrs.get(A.FORKED_FROM)
    if not isinstance(forked, str) or not forked:
        return None
    # the first colon: a run id is hex (uuid4) or the run's own name, a step id often has colons of its own
    # (an HTTP step's ``GET host:port/path#1``, an MCP server's tool)
    run_id, _, step_id = forked.partition(":")
    edits: dict[str, Any] = {}
    text = attrs.get(A.FORK_EDIT)
    if isinstance(text, str):
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            edits = {str(k): v for k, v in parsed.items()}
    tape = attrs.get(A.FORK_TAPE)
    diverged = attrs.get(A.FORK_DIVERGED_AT)
    return Lineage(
        run_id=run_id,
        step_id=step_id or None,
        tape=tape if isinstance(tape, str) and tape else None,
        edits=MappingProxyType(edits),
        diverged_at=diverged if isinstance(diverged, str) and diverged else None,
    )
