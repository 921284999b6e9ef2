"""What a replay serves from: the recorded steps of one run, consumed as calls arrive.

Lookups are by call key (a hit takes the first unconsumed step with that key, so
identical repeated calls are served in recorded order) and by a tool's position (its
nth call), which tells drift from a miss. Safe under threads and asyncio.
"""

from __future__ import annotations

import threading
import warnings
from array import array
from collections.abc import Callable, Iterable, Mapping
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
from otel_agent_replay.core import RecordedToolError, ReplayWarning, StepKind, TapeFormatError, TapePayloadMissing
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import Run, Step, StepError, telemetry_step

_TOOL = StepKind.TOOL.value


class RunIndex:
    """The recorded steps of one run, each served at most once.

    Held as positions in ``steps``: per call key the first unconsumed position and, per position, the
    next one with the same key (an array), a consumed flag per position (a bytearray), per tool its
    positions in seq order (an array). None of these is an object the garbage collector walks, so a
    replay of a 100,000-step run adds three containers to the heap, not one queue per key, and a hit
    costs the same on a large run as on a small one.
    """

    def __init__(self, run: Run, *, include_models: bool = True) -> None:
        self.run = run
        self.steps: tuple[Step, ...] = run.steps if include_models else tuple(s for s in run.steps if s.kind == _TOOL)
        steps = self.steps
        self._head: dict[str, int] = {}
        """Call key → the first position not yet taken by ``take`` (-1: none left)."""
        self._next = array("q", bytes(8 * len(steps)))
        """Position → the next position with the same call key (-1: the last)."""
        self._by_tool: dict[str, array[int]] = {}
        self._consumed = bytearray(len(steps))
        self._inside: dict[str, array[int]] = {}
        """A step's span id → the positions of the steps whose spans it encloses (the HTTP requests a tool's
        body made): served with it when it is a hit, since its body does not run."""
        self._chain(range(len(steps)), lambda i: steps[i].call_key)
        for i, step in enumerate(steps):
            positions = self._by_tool.get(step.tool)
            if positions is None:
                positions = self._by_tool[step.tool] = array("q")
            positions.append(i)
            parent = step.parent_span_id
            if parent:
                inner = self._inside.get(parent)
                if inner is None:
                    inner = self._inside[parent] = array("q")
                inner.append(i)
        self._lock = threading.Lock()
        self._keyed: dict[str, tuple[str, ...]] = _recorded_rules(steps)
        """Per tool, the key rules its keys were made with: recomputed with (``rekey``), or, when every
        step of the tool was recorded under one set of rules, those (absent: none)."""
        self._stale = frozenset(s.tool for s in steps if s.attributes.get(A.KEY_IGNORE))
        """Tools with steps recorded under key rules: their keys are recomputed even without rules now,
        unless all were recorded under the rules in force (``_keyed``)."""

    def _chain(self, positions: Iterable[int], key_of: Callable[[int], str]) -> None:
        """Link these positions, in this order, behind their keys (after any already linked)."""
        head, nxt = self._head, self._next
        tail: dict[str, int] = {}
        for i in positions:
            key = key_of(i)
            last = tail.get(key)
            if last is None:
                first = head.get(key, -1)
                if first < 0:
                    head[key] = i
                else:
                    while nxt[first] >= 0:
                        first = nxt[first]
                    nxt[first] = i
            else:
                nxt[last] = i
            nxt[i] = -1
            tail[key] = i

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
            steps = self.steps
            for key in [k for k, i in self._head.items() if i >= 0 and steps[i].tool == tool]:
                del self._head[key]
            keys: dict[int, str] = {}
            for i in self._by_tool.get(tool, ()):
                value = normalize(steps[i].args)
                keys[i] = rules.key(tool, value, patterns) if patterns else key_from_json(tool, dumps_canonical(value))
            self._chain(keys, keys.__getitem__)

    def take(self, call_key: str) -> Step | None:
        """Consume and return the first unconsumed step with this key (a hit), or None."""
        with self._lock:
            i = self._head.get(call_key, -1)
            consumed, nxt = self._consumed, self._next
            while i >= 0:
                after = nxt[i]
                self._head[call_key] = after
                if not consumed[i]:
                    consumed[i] = 1
                    step = self.steps[i]
                    if step.span_id in self._inside:  # it enclosed other recorded steps (its HTTP requests)
                        self._serve_inside(i)
                    return step
                i = after
            return None

    def _serve_inside(self, i: int) -> None:
        """Count the steps recorded inside a served step as served with it (under the lock)."""
        inside, consumed, steps = self._inside, self._consumed, self.steps
        pending = list(inside.get(steps[i].span_id, ()))
        while pending:
            inner = pending.pop()
            if not consumed[inner]:
                consumed[inner] = 1
                pending.extend(inside.get(steps[inner].span_id, ()))

    def has(self, call_key: str) -> bool:
        """Whether an unconsumed step has this key (a hit), without consuming it."""
        with self._lock:
            i = self._head.get(call_key, -1)
            while i >= 0:
                if not self._consumed[i]:
                    return True
                i = self._next[i]
            return False

    def _position(self, tool: str, n: int) -> int:
        """The position of the tool's nth recorded call (1-based) if it is still unconsumed, else -1."""
        recorded = self._by_tool.get(tool)
        if recorded is not None and 0 < n <= len(recorded) and not self._consumed[recorded[n - 1]]:
            return recorded[n - 1]
        return -1

    def at_position(self, tool: str, n: int) -> Step | None:
        """The tool's nth recorded call (1-based) if it is still unconsumed, else None."""
        with self._lock:
            i = self._position(tool, n)
            return self.steps[i] if i >= 0 else None

    def take_at_position(self, tool: str, n: int) -> Step | None:
        """Consume and return the tool's nth recorded call (1-based) if it is still unconsumed."""
        with self._lock:
            i = self._position(tool, n)
            if i < 0:
                return None
            self._consumed[i] = 1
            self._serve_inside(i)
            return self.steps[i]

    def calls_of(self, tool: str) -> list[Step]:
        """Every recorded call of a tool, in seq order."""
        steps = self.steps
        return [steps[i] for i in self._by_tool.get(tool, ())]

    def unused(self) -> list[Step]:
        """Recorded steps never served, in seq order (not those another instrumentation wrote inside a run of
        ours: no capture point asks for them, see ``tape.telemetry_step``)."""
        run = self.run
        with self._lock:
            consumed = self._consumed
            return [s for i, s in enumerate(self.steps) if not consumed[i] and not telemetry_step(run, s)]

    def nearest(self, tool: str, args: Any, limit: int = 3) -> list[tuple[Step, list[Difference]]]:
        """The recorded calls of a tool closest to ``args`` (fewest differing fields first)."""
        ranked = []
        for step in self.calls_of(tool):
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
        left_off: list[str] = []
        try:
            exc = rebuild_exception_as(target, args, facts or {}, left_off)
        except Exception:
            pass
        else:
            if left_off:
                warnings.warn(
                    f"the recorded {error.type} is raised again without {len(left_off)} of its recorded "
                    f"attribute(s), which its class does not let be set now: {'; '.join(left_off)}. Code that reads "
                    "them sees the class's own values; re-record if the class changed",
                    ReplayWarning,
                    stacklevel=2,
                )
            return exc
    return RecordedToolError(error.type, error.message)


def _json_attr(text: Any, kind: type) -> Any:
    if not isinstance(text, str):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, kind) else None


def _recorded_rules(steps: tuple[Step, ...]) -> dict[str, tuple[str, ...]]:
    """Per tool whose steps were all recorded under one set of key rules, that set: a replay with the
    same rules keeps the recorded keys instead of computing them again (the common case: a provider's
    ``@model_volatile`` preset, unchanged since the recording)."""
    texts_of: dict[str, set[Any]] = {}
    for step in steps:
        texts_of.setdefault(step.tool, set()).add(step.attributes.get(A.KEY_IGNORE))
    found: dict[str, tuple[str, ...]] = {}
    for tool, texts in texts_of.items():
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
