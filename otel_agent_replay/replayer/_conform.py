"""Live conformance: do the real tools still answer in the shape the fixtures assume?

For each read-only tool on the tapes, one live call with recorded arguments; the live result's
shape (keys, value types, list item shapes) is compared with the shape inferred from every
recorded result of that tool. A tool that is not read-only (declared so in the code, or recorded
so on the tape) is never called, and the live call runs under the replay's side-effect gate
(``_gate``): a tool that is not read-only called from inside it is refused, and the tool that
called it is reported as ``refused``. The tools come from the user's own code (``--tools
module[:attr]`` names a module the user chose to import); tape data never names a module or a
callable to run.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from otel_agent_replay.capture import DEFAULT_REDACTOR, Capture, Redactor, capture_value
from otel_agent_replay.comparison import ShapeChange, shape_changes, shape_of
from otel_agent_replay.core import ConfigurationError, SideEffect, StepKind
from otel_agent_replay.instrumentation import tool_spec
from otel_agent_replay.tape import Step, Tape, load_tape

from ._gate import LiveGate

OK = "ok"
CHANGED = "changed"
ERROR = "error"
SKIPPED = "skipped"
REFUSED = "refused"


@dataclass(frozen=True)
class ToolConformance:
    """What one tool's live call showed: ``ok``, ``changed`` (its shape), ``error``, ``refused`` (it called a
    tool that is not read-only, which was not run) or ``skipped``."""

    tool: str
    status: str
    changes: tuple[ShapeChange, ...] = ()
    reason: str = ""
    """Why it was skipped, the live error, or what was refused."""
    recorded_results: int = 0
    arguments: Any = None
    """The recorded arguments of the live call."""
    refused: tuple[str, ...] = ()
    """The tools (not read-only) its live call tried to call, refused by the gate."""

    @property
    def findings(self) -> tuple[str, ...]:
        """The findings as text: one per shape change, or the error."""
        if self.status == ERROR:
            return (f"error status: {self.reason}",)
        if self.status == REFUSED:
            return tuple(f"refused side effect: {name} is not read-only and was not run" for name in self.refused)
        return tuple(f"{c.kind.replace('_', ' ')}: {c}" for c in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "status": self.status,
            "findings": [
                {"kind": c.kind, "path": c.path, "recorded": c.expected, "live": c.actual} for c in self.changes
            ]
            + (
                [{"kind": "error_status", "path": "", "recorded": "ok", "live": self.reason}]
                if self.status == ERROR
                else []
            )
            + [{"kind": "refused_side_effect", "path": "", "recorded": None, "live": name} for name in self.refused],
            "reason": self.reason,
            "recorded_results": self.recorded_results,
            "arguments": self.arguments,
        }


@dataclass(frozen=True)
class Conformance:
    """The conformance of every tool on some tapes, in tool-name order."""

    tapes: tuple[str, ...]
    tools: tuple[ToolConformance, ...]

    @property
    def ok(self) -> bool:
        """True when every tool that was called answered in the recorded shape."""
        return all(t.status in (OK, SKIPPED) for t in self.tools)

    def of(self, tool: str) -> ToolConformance:
        """The result for one tool (``KeyError`` naming those there are)."""
        for t in self.tools:
            if t.tool == tool:
                return t
        raise KeyError(f"no tool {tool!r} on the tapes (tools: {', '.join(t.tool for t in self.tools)})")

    def __str__(self) -> str:
        lines = []
        for t in self.tools:
            head = f"{t.tool}: {t.status}"
            if t.status == SKIPPED:
                head += f" ({t.reason})"
            lines.append(head)
            lines.extend(f"  {finding}" for finding in t.findings)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"tapes": list(self.tapes), "ok": self.ok, "tools": [t.to_json() for t in self.tools]}


ToolSource = Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]] | types.ModuleType


def load_tools(target: str) -> dict[str, Callable[..., Any]]:
    """The tools named by ``module[:attr]``: the ``@tool`` functions of a module, or of the mapping,
    list or object that ``attr`` names in it. Importing the module is the caller's explicit choice."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"--tools {target}: cannot import {module_name!r} ({exc}); run from your project's folder or put it on "
            "PYTHONPATH"
        ) from exc
    source: Any = module
    if attr:
        try:
            for part in attr.split("."):
                source = getattr(source, part)
        except AttributeError:
            raise ConfigurationError(f"--tools {target}: {module_name} has no attribute {attr!r}") from None
    return tools_from(source)


def tools_from(source: Any) -> dict[str, Callable[..., Any]]:
    """Name → function for the decorated tools in a mapping, a list, a module or an object."""
    if isinstance(source, Mapping):
        candidates: Iterable[Any] = source.values()
    elif isinstance(source, list | tuple | set | frozenset):
        candidates = source
    else:
        candidates = (getattr(source, name, None) for name in dir(source) if not name.startswith("__"))
    found: dict[str, Callable[..., Any]] = {}
    for fn in candidates:
        spec = tool_spec(fn)
        if spec is not None and spec.kind == StepKind.TOOL:
            found.setdefault(spec.name, fn)
    return found


def _tapes(sources: Iterable[str | os.PathLike[str] | Tape] | str | os.PathLike[str] | Tape) -> list[Tape]:
    if isinstance(sources, str | os.PathLike | Tape):
        sources = [sources]
    return [s if isinstance(s, Tape) else load_tape(s) for s in sources]


def _live_call(name: str, fn: Callable[..., Any], arguments: dict[str, Any]) -> tuple[Any, Exception | None, list[str]]:
    """Call the decorated tool under the side-effect gate: its result, or the exception it raised, and the
    tools the gate refused on the way."""
    gate = LiveGate(name)
    try:
        with gate:
            result = fn(**arguments)
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result))
    except Exception as exc:
        return None, exc, gate.refused
    return result, None, gate.refused


def _arguments(steps: list[Step]) -> Any:
    """The recorded arguments for the live call: the first ones without a redacted value."""
    for step in steps:
        if "[REDACTED" not in step.args_json and isinstance(step.args, dict):
            return step.args
    return None


def conform(
    tapes: Iterable[str | os.PathLike[str] | Tape] | str | os.PathLike[str] | Tape,
    tools: ToolSource,
    *,
    redactor: Redactor = DEFAULT_REDACTOR,
) -> Conformance:
    """Call each read-only tool on the tapes once, live, with recorded arguments, and compare the
    shape of its result with the shape of its recorded results."""
    loaded = _tapes(tapes)
    available = tools_from(tools)
    capture = Capture(redactor=redactor)
    steps: dict[str, list[Step]] = {}
    for tape in loaded:
        for run in tape.runs:
            for step in run.steps:
                if step.kind == StepKind.TOOL:
                    steps.setdefault(step.tool, []).append(step)
    results = [_one(name, steps[name], available.get(name), capture) for name in sorted(steps)]
    return Conformance(tuple(t.path for t in loaded), tuple(results))


def _one(name: str, steps: list[Step], fn: Callable[..., Any] | None, capture: Capture) -> ToolConformance:
    recorded = [s for s in steps if s.error is None and not s.result_truncated]
    if fn is None:
        return ToolConformance(name, SKIPPED, reason="not among the tools given", recorded_results=len(recorded))
    spec = tool_spec(fn)
    assert spec is not None
    on_tape = {s.side_effect for s in steps}
    if spec.side_effect != SideEffect.READ_ONLY or on_tape - {SideEffect.READ_ONLY.value, None}:
        declared = spec.side_effect.value if spec.side_effect else "undeclared"
        return ToolConformance(
            name, SKIPPED, reason=f"not read-only ({declared}): never called", recorded_results=len(recorded)
        )
    arguments = _arguments(recorded or steps)
    if arguments is None:
        return ToolConformance(
            name, SKIPPED, reason="every recorded call has redacted arguments", recorded_results=len(recorded)
        )
    result, exc, refused = _live_call(name, fn, arguments)
    if refused:  # refused whether the error went up or the body caught it and went on
        return _refused(name, tuple(refused), len(recorded), arguments)
    if exc is not None:
        recorded_errors = {s.error.type for s in steps if s.error is not None}
        live_type = f"{type(exc).__module__}.{type(exc).__qualname__}"
        if not recorded and live_type in recorded_errors:
            return ToolConformance(name, OK, recorded_results=0, arguments=arguments)
        return ToolConformance(
            name,
            ERROR,
            reason=f"{live_type}: {capture.redactor.redact_text(str(exc))}",
            recorded_results=len(recorded),
            arguments=arguments,
        )
    live = capture_value(result, capture)
    if not recorded:
        return ToolConformance(name, OK, reason="no recorded result to compare", arguments=arguments)
    shape = shape_of(s.result for s in recorded)
    changes = tuple(shape_changes(shape, live))
    return ToolConformance(name, CHANGED if changes else OK, changes, "", len(recorded), arguments)


def _refused(name: str, refused: tuple[str, ...], recorded: int, arguments: Any) -> ToolConformance:
    reason = f"called {', '.join(dict.fromkeys(refused))}, which is not read-only: refused, never run"
    return ToolConformance(name, REFUSED, (), reason, recorded, arguments, refused)


async def _await(value: Any) -> Any:
    return await value


__all__ = ["REFUSED", "Conformance", "ToolConformance", "conform", "load_tools", "tools_from"]
