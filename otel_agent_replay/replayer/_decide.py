"""The decision for one replayed call: hit, order, stale, override, stub, refused, drift, fake, miss,
out of bounds or live, with its counters and divergences on the ledger.

The session (``_session``) binds the call to a recorded run and hands it here; what comes back
(``Decision``) says how the call is served (``_serving``).
"""

from __future__ import annotations

import datetime as _dt
import warnings
from typing import Any

from otel_agent_replay.capture import capture_value
from otel_agent_replay.comparison import describe, json_changes
from otel_agent_replay.core import (
    DivergenceKind,
    DriftPolicy,
    MissPolicy,
    ModelPolicy,
    RecordMode,
    ReplayWarning,
    SideEffect,
    SideEffectPolicy,
    SideEffectRefused,
    StalePolicy,
    TapeStale,
    TapeWarning,
    Then,
)
from otel_agent_replay.instrumentation import Prepared, ToolSpec
from otel_agent_replay.tape import Step, Tape
from otel_agent_replay.timetravel import Edits, ForkState

from ._ledger import Ledger
from ._messages import (
    declaration_changed,
    drift_error,
    miss_error,
    no_fallback_error,
    ordinal,
    refused_error,
    unvouched,
)
from ._options import ReplayOptions
from ._runs import ReplayRun
from ._serving import Decision

_READ_ONLY = SideEffect.READ_ONLY
_NO_OVERRIDE = object()


class Decider:
    """Decides each call of one replay (the rules of ``docs/design.md`` "Replay"), counting as it goes."""

    def __init__(
        self,
        options: ReplayOptions,
        ledger: Ledger,
        tape: Tape | None,
        tape_path: str | None,
        fork: ForkState | None = None,
    ) -> None:
        self.options = options
        self.fork = fork or ForkState(Then.RAISE, None)
        self._edits = Edits(options.edit)
        self.ledger = ledger
        self.tape = tape
        self.tape_path = tape_path
        self._models_live = options.model_policy == ModelPolicy.LIVE
        self._stub_all = options.side_effect_policy == SideEffectPolicy.STUB
        self._new_episodes = options.record_mode == RecordMode.NEW_EPISODES
        self._out_of_bounds = options.miss_policy == MissPolicy.ERROR_RESULT
        self._count_drift = options.drift_policy == DriftPolicy.COUNT
        self._recorded_effects: dict[str, str] | None = None
        self._editing = bool(self._edits)
        self._overrides = bool(options.overrides)

    def read_only(self, spec: ToolSpec) -> bool:
        """Whether the tool is read-only: as decorated, else as ``replay(declare=...)`` says."""
        declared = spec.side_effect or self.options.declared.get(spec.name)
        return declared == _READ_ONLY

    def decide(self, spec: ToolSpec, bound: ReplayRun, prep: Prepared) -> Decision:
        __tracebackhide__ = True  # pytest shows the user's frames, not ours
        name = spec.name
        n = bound.position(name)
        seq = prep.ids.seq
        run_id = bound.recorded_id
        if spec.is_llm and self._models_live:
            self.ledger.bump("steps")
            return Decision("live")
        read_only = spec.is_llm or self.read_only(spec)
        if self.fork.forked:
            return self._after_fork(spec, bound, prep, n, read_only)
        if not read_only and name not in self.options.stubbed and not self._stub_all:
            if self._out_of_bounds and self._is_miss(bound, name, n, prep.captured.call_key):
                return self._answer_out_of_bounds(name, run_id, n, seq)
            self.ledger.bump("steps", "refused_side_effects")
            declared = spec.side_effect or self.options.declared.get(name)
            self.ledger.fail(refused_error(name, declared, run_id, self.options.hints), run_id, name, n, seq)
        index = bound.index
        step = index.take(prep.captured.call_key) if index is not None else None
        if step is not None:
            overtaken = bound.order_before(step)
            if overtaken is not None:
                self.ledger.diverge(
                    DivergenceKind.ORDER,
                    run_id,
                    name,
                    n,
                    seq,
                    f"order in run {run_id}: {step.step_id} ran before {overtaken.step_id} when recorded (one after "
                    f"the other), and after it now (live seq {seq})",
                )
            if step.expires_at or (spec.version is not None and step.tool_version is not None):
                self._check_fresh(spec, step, run_id, n)
            if self._editing or self._overrides:  # neither (the usual replay): a hit is served as recorded
                edited, value = self._edits.get(step) if self._editing else (False, None)
                if edited:
                    asked = edit_json(self._edits.by_step[step.step_id], prep)  # as the user gave it, not the response
                    self.fork.edited(run_id=run_id, step=step, value=asked, run_span=prep.run.span)
                override = value if edited else self._override(name, n)
            else:
                override = _NO_OVERRIDE
            if override is not _NO_OVERRIDE:
                stub = () if read_only else ("stubbed_side_effects",)
                self.ledger.bump("steps", "tape_hits", "overrides_applied", *stub)
                return Decision("tape", step=step, override=override, has_override=True)
            if read_only:
                self.ledger.bump("steps", "tape_hits")
            else:
                self.ledger.bump("steps", "tape_hits", "stubbed_side_effects")
            return Decision("tape", step=step)
        drifted = index.at_position(name, n) if index is not None else None
        if drifted is not None and self.fork.forks:
            changes = describe(json_changes(drifted.args, prep.captured.value))
            self.ledger.bump("drift_events")
            return self._fork_here(spec, bound, prep, n, read_only, drifted, DivergenceKind.DRIFT, changes)
        if drifted is not None and self._count_drift and not spec.is_llm:
            answered = self._answer_drift(spec, bound, prep, n, read_only, drifted)
            if answered is not None:
                return answered
        if drifted is not None:
            self.ledger.bump("steps", "drift_events")
            self.ledger.fail(
                drift_error(bound, drifted, spec, prep, n, self.options.record_mode, self.options.hints),
                run_id,
                name,
                n,
                seq,
            )
        fake = self.options.fallbacks.get(name)
        if fake is not None:
            self.ledger.bump("steps", "tape_misses", "fallback_calls")
            return Decision("fallback", fake=fake)
        if self._new_episodes and read_only and not spec.is_llm:
            self.ledger.bump("steps", "tape_misses")
            self._check_vouched(spec, run_id, n, seq)
            self._check_declaration(spec, run_id, n, seq)
            return Decision("live", append=True)
        if self._out_of_bounds and not spec.is_llm:
            return self._answer_out_of_bounds(name, run_id, n, seq)
        if self.fork.forks:
            self.ledger.bump("tape_misses")
            missing = f"the recording has no {ordinal(n)} call of {name}"
            return self._fork_here(spec, bound, prep, n, read_only, None, DivergenceKind.MISS, missing)
        self.ledger.bump("steps", "tape_misses")
        self.ledger.fail(
            miss_error(bound, spec, prep, n, self.options.record_mode, self.tape_path, self.options.hints),
            run_id,
            name,
            n,
            seq,
        )

    def _fork_here(
        self,
        spec: ToolSpec,
        bound: ReplayRun,
        prep: Prepared,
        n: int,
        read_only: bool,
        step: Step | None,
        kind: DivergenceKind,
        difference: str,
    ) -> Decision:
        """The first divergence of a replay that forks: noted (``r.fork``, the report, the run span), then
        the call is served as every later one will be."""
        run_id = bound.recorded_id
        fork = self.fork.begin(
            run_id=run_id,
            step=step,
            tool=spec.name,
            seq=prep.ids.seq,
            cause=kind.value,
            difference=difference,
            run_span=prep.run.span,
        )
        self.ledger.diverge(kind, run_id, spec.name, n, prep.ids.seq, str(fork))
        return self._after_fork(spec, bound, prep, n, read_only)

    def _after_fork(self, spec: ToolSpec, bound: ReplayRun, prep: Prepared, n: int, read_only: bool) -> Decision:
        """A call after the fork: live (``then="live"``: models and read-only tools) or a contract fake
        (``then="fallbacks"``); a tool that is not read-only stays under the side-effect policy."""
        name, run_id, seq = spec.name, bound.recorded_id, prep.ids.seq
        fake = self.options.fallbacks.get(name)
        if self.fork.then == Then.FALLBACKS or (fake is not None and not read_only):
            if fake is not None:
                self.ledger.bump("steps", "fallback_calls")
                return Decision("fallback", fake=fake)
            self.ledger.bump("steps", "tape_misses")
            where = self.fork.fork
            if where is not None and where.seq == seq and where.tool == name:
                forked = f"is where the replay forked ({where.cause}: {where.difference})"
            else:
                at = "" if where is None else f" at {where.step_id or f'a call of {where.tool}'}"
                forked = f"came after the replay forked{at}"
            self.ledger.fail(no_fallback_error(bound, spec, prep, n, forked, self.options.hints), run_id, name, n, seq)
        if read_only and spec.vouched:
            self.ledger.bump("steps")  # the session counts the live call as it serves it
            return Decision("live")
        index = bound.index
        if index is not None and (name in self.options.stubbed or self._stub_all):
            # after a fork its arguments may differ: a stubbed tool answers with its call at this position
            step = index.take(prep.captured.call_key) or index.take_at_position(name, n)
            if step is not None:
                self.ledger.bump("steps", "tape_hits", "stubbed_side_effects")
                return Decision("tape", step=step)
        self.ledger.bump("steps", "refused_side_effects")
        if read_only:  # read-only by a tape's word alone
            self.ledger.fail(SideEffectRefused(unvouched(name)), run_id, name, n, seq)
        declared = spec.side_effect or self.options.declared.get(name)
        self.ledger.fail(refused_error(name, declared, run_id, self.options.hints), run_id, name, n, seq)

    def _check_vouched(self, spec: ToolSpec, run_id: str, n: int, seq: int) -> None:
        """A tool read-only by a tape's word alone never runs live."""
        if not spec.vouched:
            self.ledger.bump("refused_side_effects")
            self.ledger.fail(SideEffectRefused(unvouched(spec.name)), run_id, spec.name, n, seq)

    def _answer_drift(
        self, spec: ToolSpec, bound: ReplayRun, prep: Prepared, n: int, read_only: bool, drifted: Step
    ) -> Decision | None:
        """Drift under ``on_drift="count"``: the call answered as a repetition answers it, counted and noted;
        None when nothing may answer it (a read-only tool without a fallback under ``on_miss="raise"``)."""
        name, run_id, seq = spec.name, bound.recorded_id, prep.ids.seq
        changes = describe(json_changes(drifted.args, prep.captured.value))
        drift = f"{name} (call {n}, seq {seq}) was called with other arguments than recorded ({changes})"
        fake = self.options.fallbacks.get(name)
        if fake is not None:
            self.ledger.bump("steps", "drift_events", "tape_misses", "fallback_calls")
            self.ledger.diverge(DivergenceKind.DRIFT, run_id, name, n, seq, f"{drift}: answered by its fallback")
            return Decision("fallback", fake=fake)
        if not read_only:
            index = bound.index
            step = index.take_at_position(name, n) if index is not None else None
            if step is None:
                return None
            self.ledger.bump("steps", "drift_events", "tape_hits", "stubbed_side_effects")
            self.ledger.diverge(
                DivergenceKind.DRIFT, run_id, name, n, seq,
                f"{drift}: answered with its recorded call {step.step_id} (stubbed, never run; on_drift='count')",
            )  # fmt: skip
            return Decision("tape", step=step)
        if not self._out_of_bounds:
            return None
        self.ledger.bump("drift_events")
        return self._answer_out_of_bounds(name, run_id, n, seq, why=f"{drift}; the tape cannot answer them")

    @staticmethod
    def _is_miss(bound: ReplayRun, name: str, n: int, call_key: str) -> bool:
        """Neither a hit nor drift: the tape has no such call (looked up without consuming)."""
        index = bound.index
        return index is None or (not index.has(call_key) and index.at_position(name, n) is None)

    def _answer_out_of_bounds(self, name: str, run_id: str, n: int, seq: int, why: str | None = None) -> Decision:
        from otel_agent_replay.store import OUT_OF_BOUNDS  # here: a replay that never misses loads no store

        self.ledger.bump("steps", "tape_misses", "out_of_bounds_calls")
        why = why or f"{name} (call {n}, seq {seq}) is not on the tape"
        message = f"{why}: answered {{'error': {OUT_OF_BOUNDS!r}}} (on_miss='error_result')"
        self.ledger.diverge(DivergenceKind.OUT_OF_BOUNDS, run_id, name, n, seq, message)
        return Decision("out_of_bounds", override={"error": OUT_OF_BOUNDS, "tool": name})

    def _check_declaration(self, spec: ToolSpec, run_id: str, n: int, seq: int) -> None:
        """A tool recorded as not read-only that declares read_only now: the recorded declaration wins."""
        name = spec.name
        recorded = self._recorded_side_effects().get(name)
        if recorded is None or recorded == _READ_ONLY or self.options.declared.get(name) == _READ_ONLY:
            return
        declared = spec.side_effect.value if spec.side_effect is not None else _READ_ONLY.value
        message = declaration_changed(name, recorded, declared)
        warnings.warn(message, ReplayWarning, stacklevel=5)
        self.ledger.bump("refused_side_effects")
        self.ledger.fail(SideEffectRefused(message), run_id, name, n, seq)

    def _recorded_side_effects(self) -> dict[str, str]:
        """Tool → the side effect its steps were recorded with (the first one that is not read-only wins)."""
        found = self._recorded_effects
        if found is None:
            found = {}
            for run in self.tape.runs if self.tape is not None else ():
                for step in run.steps:
                    if step.side_effect and found.get(step.tool, _READ_ONLY) == _READ_ONLY:
                        found[step.tool] = step.side_effect
            self._recorded_effects = found
        return found

    def _override(self, name: str, n: int) -> Any:
        overrides = self.options.overrides
        if not overrides:
            return _NO_OVERRIDE
        if (name, n) in overrides:
            return overrides[(name, n)]
        return overrides.get(name, _NO_OVERRIDE)

    def _check_fresh(self, spec: ToolSpec, step: Step, run_id: str, n: int) -> None:
        if step.expires_at:
            try:
                expires = _dt.datetime.fromisoformat(step.expires_at)
            except ValueError:
                expires = None
            if expires is not None and expires < _dt.datetime.now(_dt.timezone.utc):
                message = (
                    f"{step.tool} (recorded seq {step.seq}) expired at {step.expires_at}; its answer may be out "
                    f"of date: re-record the tape ({self.options.hints.mode('all')})"
                )
                self.ledger.bump("stale_steps")
                self.ledger.diverge(DivergenceKind.EXPIRED, run_id, step.tool, n, step.seq, message)
                warnings.warn(message, TapeWarning, stacklevel=4)
        if spec.version is not None and step.tool_version is not None and spec.version != step.tool_version:
            message = (
                f"{step.tool} is version {spec.version!r} now but was recorded at version {step.tool_version!r} "
                f"(recorded seq {step.seq}); re-record the tape ({self.options.hints.mode('all')}) to refresh it"
            )
            self.ledger.bump("stale_steps")
            if self.options.stale_policy == StalePolicy.ERROR:
                self.ledger.fail(TapeStale(message), run_id, step.tool, n, step.seq)
            self.ledger.diverge(DivergenceKind.STALE, run_id, step.tool, n, step.seq, message)
            warnings.warn(message, TapeWarning, stacklevel=4)


def edit_json(value: Any, prep: Prepared) -> Any:
    """An edit as the fork's run span records it: redacted JSON data, an exception as its type and message."""
    capture = prep.run.capture
    if isinstance(value, type) and issubclass(value, BaseException):
        return {"raise": value.__name__}
    if isinstance(value, BaseException):
        return {"raise": type(value).__name__, "message": capture.redactor.redact_text(str(value))}
    return capture_value(value, capture)
