"""What happened in a replay: its counters, its divergences, and the calls it served.

The session writes here as it serves calls; ``stats``, ``report`` and ``view()`` read from
here. Thread-safe: counters and lists change under one lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn

from otel_agent_replay.capture import usage_tokens
from otel_agent_replay.comparison import ObservedCall, RunView
from otel_agent_replay.core import ReplayDivergence
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import ToolSpec

STAT_KEYS = (
    "steps",
    "tape_hits",
    "tape_misses",
    "live_tool_calls",
    "live_model_calls",
    "real_side_effects",
    "drift_events",
    "refused_side_effects",
    "stubbed_side_effects",
    "fallback_calls",
    "overrides_applied",
    "unused_entries",
    "stale_steps",
    "runs_replayed",
)


@dataclass(frozen=True, slots=True)
class Divergence:
    """One way the replayed behaviour differed from the recording."""

    kind: str
    """``drift``, ``miss``, ``refused``, ``unused``, ``stale``, ``expired`` or ``runs``."""
    run_id: str
    """The recorded run's id ("" when there was none to replay)."""
    tool: str
    position: int
    """The tool's nth call in the run (0 when it does not apply)."""
    seq: int | None
    message: str


class Ledger:
    """Counters, divergences and observed calls of one replay."""

    def __init__(self) -> None:
        self._stats = dict.fromkeys(STAT_KEYS, 0)
        self._report: list[Divergence] = []
        self.raised: list[ReplayDivergence] = []
        """Divergence errors raised during the replay, in order (an agent may have swallowed them)."""
        self._observed: list[tuple[ToolSpec, int, Any, object, BaseException | None]] = []
        self._outputs: list[object] = []
        self._lock = threading.Lock()

    def bump(self, *names: str) -> None:
        """Add one to each named counter."""
        with self._lock:
            for name in names:
                self._stats[name] += 1

    def set_count(self, name: str, value: int) -> None:
        with self._lock:
            self._stats[name] = value

    def count_recorded(self, spec: ToolSpec, read_only: bool) -> int:
        """Count a call that ran live while recording; returns its position among all calls."""
        with self._lock:
            self._stats["steps"] += 1
            if spec.kind == A.KIND_LLM:
                self._stats["live_model_calls"] += 1
            else:
                self._stats["live_tool_calls"] += 1
                if not read_only:
                    self._stats["real_side_effects"] += 1
            return self._stats["steps"]

    def stats(self, mode: str) -> MappingProxyType[str, Any]:
        """A read-only snapshot of the counters, with the mode."""
        with self._lock:
            snapshot: dict[str, Any] = {"mode": mode, **self._stats}
        return MappingProxyType(snapshot)

    def report(self) -> tuple[Divergence, ...]:
        with self._lock:
            return tuple(self._report)

    def diverge(self, kind: str, run_id: str, tool: str, position: int, seq: int | None, message: str) -> None:
        """Note a divergence in the report."""
        with self._lock:
            self._report.append(Divergence(kind, run_id, tool, position, seq, message))

    def fail(self, error: ReplayDivergence, run_id: str, tool: str, position: int, seq: int | None) -> NoReturn:
        """Note a divergence and raise its error."""
        self.diverge(error.kind, run_id, tool, position, seq, str(error))
        with self._lock:
            self.raised.append(error)
        raise error

    def remember(self, spec: ToolSpec, seq: int, args: Any, result: object, error: BaseException | None) -> None:
        """Keep a served call, raw: a view is built only when asked for, so serving stays cheap."""
        self._observed.append((spec, seq, args, result, error))  # list.append is atomic

    def add_output(self, output: object) -> None:
        with self._lock:
            self._outputs.append(output)

    def view(self, label: str) -> RunView:
        """The calls served so far, and the last run's output, as a ``RunView``."""
        calls = []
        for spec, seq, args, result, error in list(self._observed):
            inp, out = usage_tokens(result) if spec.kind == A.KIND_LLM and error is None else (None, None)
            calls.append(
                ObservedCall(
                    kind=spec.kind,
                    tool=spec.name,
                    args=args,
                    result=result,
                    error=type(error).__name__ if error is not None else None,
                    seq=seq,
                    input_tokens=inp,
                    output_tokens=out,
                )
            )
        with self._lock:
            output = self._outputs[-1] if self._outputs else None
        return RunView.of_calls(calls, output, label=label)
