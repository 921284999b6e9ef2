"""What a replay serves from: the recorded steps of one run, consumed as calls arrive.

Lookups are by call key (a hit takes the first unconsumed step with that key, so
identical repeated calls are served in recorded order) and by a tool's position (its
nth call), which tells drift from a miss. Safe under threads and asyncio.
"""

from __future__ import annotations

import builtins
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from otel_agent_replay.capture import BlobStore
from otel_agent_replay.comparison import Difference, json_changes
from otel_agent_replay.core import RecordedToolError, StepKind, TapeFormatError, TapePayloadMissing
from otel_agent_replay.tape import Run, Step, StepError


class RunIndex:
    """The recorded steps of one run, each served at most once."""

    def __init__(self, run: Run, *, include_models: bool = True) -> None:
        self.run = run
        self.steps: tuple[Step, ...] = tuple(s for s in run.steps if include_models or s.kind == StepKind.TOOL)
        self._by_key: dict[str, deque[Step]] = {}
        self._by_tool: dict[str, list[Step]] = {}
        for step in self.steps:
            self._by_key.setdefault(step.call_key, deque()).append(step)
            self._by_tool.setdefault(step.tool, []).append(step)
        self._consumed: set[int] = set()
        self._lock = threading.Lock()

    def take(self, call_key: str) -> Step | None:
        """Consume and return the first unconsumed step with this key (a hit), or None."""
        with self._lock:
            queue = self._by_key.get(call_key)
            while queue:
                step = queue.popleft()
                if id(step) not in self._consumed:
                    self._consumed.add(id(step))
                    return step
            return None

    def has(self, call_key: str) -> bool:
        """Whether an unconsumed step has this key (a hit), without consuming it."""
        with self._lock:
            return any(id(step) not in self._consumed for step in self._by_key.get(call_key, ()))

    def at_position(self, tool: str, n: int) -> Step | None:
        """The tool's nth recorded call (1-based) if it is still unconsumed, else None."""
        with self._lock:
            recorded = self._by_tool.get(tool, [])
            if 0 < n <= len(recorded) and id(recorded[n - 1]) not in self._consumed:
                return recorded[n - 1]
            return None

    def calls_of(self, tool: str) -> list[Step]:
        """Every recorded call of a tool, in seq order."""
        return list(self._by_tool.get(tool, []))

    def unused(self) -> list[Step]:
        """Recorded steps never served, in seq order."""
        with self._lock:
            return [s for s in self.steps if id(s) not in self._consumed]

    def nearest(self, tool: str, args: Any, limit: int = 3) -> list[tuple[Step, list[Difference]]]:
        """The recorded calls of a tool closest to ``args`` (fewest differing fields first)."""
        ranked = []
        for step in self._by_tool.get(tool, []):
            changes = json_changes(step.args, args)
            ranked.append((len(changes), step.seq, step, changes))
        ranked.sort(key=lambda item: (item[0], item[1]))
        return [(step, changes) for _, _, step, changes in ranked[:limit]]


def recorded_result(step: Step, tape_path: str | None) -> Any:
    """The recorded result, from the blob store beside the tape when it was shortened."""
    if not step.result_truncated:
        return step.result
    if tape_path and step.result_sha256:
        store = BlobStore(Path(tape_path).with_name(Path(tape_path).name + ".blobs"))
        try:
            return orjson.loads(store.get(step.result_sha256))
        except TapeFormatError:
            raise  # a blob that is not what its name says, or not a file: never served
        except (FileNotFoundError, ValueError):
            pass
    raise TapePayloadMissing(
        f"{tape_path}: the result of {step.tool} (seq {step.seq}) was shortened when recorded and its full "
        f"value (sha256 {step.result_sha256}) is not stored beside the tape; re-record with "
        "record(..., store_full_payloads=True) or raise max_string / max_result_bytes"
    )


def rebuild_exception(error: StepError) -> BaseException:
    """The recorded exception as its own type when that is safe, else ``RecordedToolError``.

    Safe means: the type's module is already imported (nothing is imported or evaluated
    to find it), it is a subclass of ``Exception``, and it can be built from the message.
    """
    module_name, _, qualname = error.type.rpartition(".")
    module = sys.modules.get(module_name) if module_name else builtins
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part, None) if target is not None else None
    if isinstance(target, type) and issubclass(target, Exception):
        try:
            return target(error.message)
        except Exception:
            pass
    return RecordedToolError(error.type, error.message)
