"""What happened in a replay: its counters, its divergences, and the calls it served.

The session writes here as it serves calls; ``stats``, ``report`` and ``view()`` read from
here. Thread-safe: counters and lists change under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, get_args

from otel_agent_replay.capture import usage_tokens
from otel_agent_replay.comparison import ObservedCall, RunView
from otel_agent_replay.core import DivergenceKind, ReplayDivergence
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import ToolSpec

Counter = Literal[
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
    "out_of_bounds_calls",
    "outside_calls",
    "blocked_connections",
    "passthrough_requests",
    "loopback_connections",
    "child_processes",
]
"""The name of a replay counter, as ``stats[...]`` spells it (a contract: ``stats["live_tool_calls"]``)."""

STAT_KEYS: tuple[Counter, ...] = get_args(Counter)


def _tokens(spec: ToolSpec, result: object) -> tuple[int | None, int | None]:
    """A model call's token usage: what its spec reads from the result (an HTTP model step's response,
    in its provider's fields), else the result's ``usage``."""
    attrs = spec.result_facts(result)
    if A.GEN_AI_USAGE_INPUT_TOKENS in attrs or A.GEN_AI_USAGE_OUTPUT_TOKENS in attrs:
        return attrs.get(A.GEN_AI_USAGE_INPUT_TOKENS), attrs.get(A.GEN_AI_USAGE_OUTPUT_TOKENS)
    return usage_tokens(result)


@dataclass(frozen=True, slots=True, eq=False)
class ReplayStats(Mapping[str, Any]):
    """A replay's counters: typed attributes, and readable as a mapping by their documented keys.

    ``stats.hits`` and ``stats["tape_hits"]`` are the same number; ``dict(stats)`` has every key
    (the counters and ``mode``).
    """

    mode: str
    """``none``, ``once``, ``new_episodes``, ``all``, or ``record`` while the replay records."""
    steps: int = 0
    """Calls the replay served or refused."""
    hits: int = 0
    """Served from the tape (``tape_hits``)."""
    misses: int = 0
    """Not on the tape (``tape_misses``)."""
    live_tool_calls: int = 0
    live_model_calls: int = 0
    real_side_effects: int = 0
    """Tools that are not read-only and ran for real (only while recording)."""
    drifts: int = 0
    """Calls at a recorded position with other arguments (``drift_events``)."""
    refused_side_effects: int = 0
    stubbed_side_effects: int = 0
    fallback_calls: int = 0
    overrides_applied: int = 0
    unused: int = 0
    """Recorded steps never asked for (``unused_entries``)."""
    stale_steps: int = 0
    runs_replayed: int = 0
    out_of_bounds_calls: int = 0
    """Misses answered with an ``unexpected_tool_call`` error result (``on_miss="error_result"``)."""
    outside_calls: int = 0
    """Decorated calls made from a thread or task that did not carry the replay's context (refused unless
    ``outside_calls='read_only'`` let a read-only one run)."""
    blocked_connections: int = 0
    """Outgoing connections (or sends) the network guard stopped (``NetworkBlocked``)."""
    passthrough_requests: int = 0
    """HTTP requests sent live to a host named in ``passthrough=`` (never recorded)."""
    loopback_connections: int = 0
    """Connections to loopback that a strict replay let through below HTTP (a database, or a client that
    speaks HTTP over raw sockets and so is not seen as HTTP): counted and warned, never silent."""
    child_processes: int = 0
    """Processes started from the replay's context: what they do cannot be refused from here."""

    def __getitem__(self, key: str) -> Any:
        name = _FIELD_OF.get(key)
        if name is None:
            raise KeyError(key)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(_KEYS)

    def __len__(self) -> int:
        return len(_KEYS)


_FIELD_OF: dict[str, str] = {
    "mode": "mode",
    **{key: key for key in STAT_KEYS},
    "tape_hits": "hits",
    "tape_misses": "misses",
    "drift_events": "drifts",
    "unused_entries": "unused",
}
_KEYS: tuple[str, ...] = ("mode", *STAT_KEYS)


@dataclass(frozen=True, slots=True)
class Divergence:
    """One way the replayed behaviour differed from the recording (an entry of ``ReplaySession.report``)."""

    kind: DivergenceKind
    """``drift``, ``miss``, ``out_of_bounds``, ``refused``, ``unused``, ``stale``, ``expired``, ``run_count``
    or ``order`` (``out_of_bounds`` and ``order`` are reported, not raised)."""
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

    def bump(self, *names: Counter) -> None:
        """Add one to each named counter."""
        with self._lock:
            for name in names:
                self._stats[name] += 1

    def set_count(self, name: Counter, value: int) -> None:
        with self._lock:
            self._stats[name] = value

    def count_recorded(self, spec: ToolSpec, read_only: bool) -> int:
        """Count a call that ran live while recording; returns its position among all calls."""
        with self._lock:
            self._stats["steps"] += 1
            if spec.is_llm:
                self._stats["live_model_calls"] += 1
            else:
                self._stats["live_tool_calls"] += 1
                if not read_only:
                    self._stats["real_side_effects"] += 1
            return self._stats["steps"]

    def stats(self, mode: str) -> ReplayStats:
        """A snapshot of the counters, with the mode."""
        with self._lock:
            counts = dict(self._stats)
        return ReplayStats(mode, **{_FIELD_OF[key]: value for key, value in counts.items()})

    def report(self) -> tuple[Divergence, ...]:
        with self._lock:
            return tuple(self._report)

    def diverge(
        self, kind: DivergenceKind, run_id: str, tool: str, position: int, seq: int | None, message: str
    ) -> None:
        """Note a divergence in the report."""
        with self._lock:
            self._report.append(Divergence(kind, run_id, tool, position, seq, message))

    def fail(self, error: ReplayDivergence, run_id: str, tool: str, position: int, seq: int | None) -> NoReturn:
        """Note a divergence and raise its error."""
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        self.failed(error, run_id, tool, position, seq)
        raise error

    def failed(self, error: ReplayDivergence, run_id: str, tool: str, position: int, seq: int | None) -> None:
        """Note a divergence whose error is raised elsewhere (it still fails the replay at its end)."""
        self.diverge(DivergenceKind(error.kind), run_id, tool, position, seq, str(error))
        with self._lock:
            self.raised.append(error)

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
            inp, out = _tokens(spec, result) if spec.is_llm and error is None else (None, None)
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
