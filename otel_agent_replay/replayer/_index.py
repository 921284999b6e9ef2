"""What a replay serves from: the recorded steps of one run, consumed as calls arrive.

Lookups are by call key (a hit takes the first unconsumed step with that key, so
identical repeated calls are served in recorded order) and by a tool's position (its
nth call), which tells drift from a miss. Safe under threads and asyncio.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from otel_agent_replay.capture import (
    BlobStore,
    Description,
    KeyRules,
    dumps_canonical,
    key_from_json,
    loaded_class,
    normalize,
    rebuild,
    rebuild_exception_as,
)
from otel_agent_replay.comparison import Difference, json_changes
from otel_agent_replay.core import RecordedToolError, StepKind, TapeFormatError, TapePayloadMissing
from otel_agent_replay.core import attributes as A
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
        self._inside: dict[str, list[Step]] = {}
        """A step's span id → the steps whose spans it encloses (the HTTP requests a tool's body made):
        served with it when it is a hit, since its body does not run."""
        for step in self.steps:
            if step.parent_span_id:
                self._inside.setdefault(step.parent_span_id, []).append(step)
        self._lock = threading.Lock()
        self._keyed: dict[str, tuple[str, ...]] = _recorded_rules(self._by_tool)
        """Per tool, the key rules its keys were made with: recomputed with (``rekey``), or, when every
        step of the tool was recorded under one set of rules, those (absent: none)."""
        self._stale = frozenset(s.tool for s in self.steps if s.attributes.get(A.KEY_IGNORE))
        """Tools with steps recorded under key rules: their keys are recomputed even without rules now,
        unless all were recorded under the rules in force (``_keyed``)."""

    def keyed_otherwise(self, tool: str, patterns: tuple[str, ...]) -> bool:
        """Whether the tool's recorded keys were not made with these rules (a cheap check, no lock)."""
        return self._keyed.get(tool, () if tool not in self._stale else None) != patterns

    def rekey(self, tool: str, patterns: tuple[str, ...], rules: KeyRules) -> None:
        """Recompute the recorded keys of a tool's steps from their recorded arguments with these rules.

        Done once per tool and rule set; without rules (and no step recorded under rules) the
        recorded keys stand, so tapes without rules cost nothing here.
        """
        with self._lock:
            if self._keyed.get(tool, () if tool not in self._stale else None) == patterns:
                return
            self._keyed[tool] = patterns
            for key in [k for k, queue in self._by_key.items() if queue and queue[0].tool == tool]:
                del self._by_key[key]
            for step in self._by_tool.get(tool, []):
                value = normalize(step.args)
                key = rules.key(tool, value, patterns) if patterns else key_from_json(tool, dumps_canonical(value))
                self._by_key.setdefault(key, deque()).append(step)

    def take(self, call_key: str) -> Step | None:
        """Consume and return the first unconsumed step with this key (a hit), or None."""
        with self._lock:
            queue = self._by_key.get(call_key)
            while queue:
                step = queue.popleft()
                if id(step) not in self._consumed:
                    self._consumed.add(id(step))
                    self._serve_inside(step)
                    return step
            return None

    def _serve_inside(self, step: Step) -> None:
        """Count the steps recorded inside a served step as served with it (under the lock)."""
        pending = list(self._inside.get(step.span_id, ()))
        while pending:
            inner = pending.pop()
            if id(inner) not in self._consumed:
                self._consumed.add(id(inner))
                pending.extend(self._inside.get(inner.span_id, ()))

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

    def take_at_position(self, tool: str, n: int) -> Step | None:
        """Consume and return the tool's nth recorded call (1-based) if it is still unconsumed."""
        with self._lock:
            recorded = self._by_tool.get(tool, [])
            if 0 < n <= len(recorded) and id(recorded[n - 1]) not in self._consumed:
                step = recorded[n - 1]
                self._consumed.add(id(step))
                self._serve_inside(step)
                return step
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


def recorded_result(step: Step, tape_path: str | None, hint: Any = None) -> Any:
    """The recorded result rebuilt as the live call returned it (see ``capture.rebuild``).

    The type comes from ``hint`` (the tool's return annotation or ``result_type=``) first, then
    from the type description recorded beside the JSON; the JSON comes from the blob store
    beside the tape when it was shortened.
    """
    return rebuild(recorded_json(step, tape_path), hint, recorded_type(step))


def recorded_type(step: Step) -> Description:
    """The type description recorded with a step's result (None: plain JSON, or none recorded)."""
    text = step.attributes.get(A.RESULT_TYPE)
    if not isinstance(text, str):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def recorded_json(step: Step, tape_path: str | None) -> Any:
    """The recorded result as JSON data, from the blob store beside the tape when it was shortened."""
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


def rebuild_exception(error: StepError, attributes: Mapping[str, Any] | None = None) -> BaseException:
    """The recorded exception as its own class when that is loaded, else ``RecordedToolError``.

    The class is looked up, never imported: its module must already be in ``sys.modules``, and it
    must be an ``Exception`` subclass. It gets the recorded ``args`` and JSON-able attributes
    (``status_code``, ``code``) when the tape has them (tapes of this version do), else it is
    built from the message.
    """
    target = loaded_class(error.type if "." in error.type else f"builtins.{error.type}")
    attrs = attributes or {}
    args = _json_attr(attrs.get(A.ERROR_ARGS), list)
    facts = _json_attr(attrs.get(A.ERROR_ATTRIBUTES), dict)
    if isinstance(target, type) and issubclass(target, Exception):
        if args is None:
            args = [error.message]
        try:
            return rebuild_exception_as(target, args, facts or {})
        except Exception:
            pass
    return RecordedToolError(error.type, error.message)


def _json_attr(text: Any, kind: type) -> Any:
    if not isinstance(text, str):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, kind) else None


def _recorded_rules(by_tool: dict[str, list[Step]]) -> dict[str, tuple[str, ...]]:
    """Per tool whose steps were all recorded under one set of key rules, that set: a replay with the
    same rules keeps the recorded keys instead of computing them again (the common case: a provider's
    ``@model_volatile`` preset, unchanged since the recording)."""
    found: dict[str, tuple[str, ...]] = {}
    for tool, steps in by_tool.items():
        texts = {s.attributes.get(A.KEY_IGNORE) for s in steps}
        if len(texts) != 1:
            continue
        text = texts.pop()
        if not isinstance(text, str) or not text:
            continue
        try:
            patterns = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue  # not ours: recomputed
        if isinstance(patterns, list) and all(isinstance(p, str) for p in patterns):
            found[tool] = tuple(patterns)
    return found
