"""What ``regress`` and ``rescore`` give back: a case (one run of one recorded run), the whole result."""

from __future__ import annotations

from dataclasses import dataclass

from otel_agent_replay.store import Evaluation

__all__ = ["CaseRuns", "RegressCase", "RegressResult", "RescoredSession"]


@dataclass(frozen=True, slots=True)
class RegressCase:
    """One run of one recorded run by the new version (one repetition of its case)."""

    recorded_session: str
    """The recorded run's id (its session in the store, when it was ingested): the case."""
    tape: str
    """The tape the recorded run came from."""
    session_id: str | None
    """The new run's session in the store; None when nothing could be stored (see ``error``)."""
    status: str
    """The new session's status (``success``, ``failed``), or ``error`` when it was not stored."""
    out_of_bounds: tuple[str, ...]
    """Tools whose calls were answered out of bounds, in call order."""
    evaluations: tuple[Evaluation, ...]
    error: str | None = None
    """What the agent or the replay raised (``TapeDrift`` …), or why the run was not stored."""
    problems: tuple[str, ...] = ()
    """Evaluators that raised or returned something else than evaluations."""
    repetition: int = 1
    """Which of the ``repeat`` runs of the case this was (1 to k)."""

    @property
    def passed(self) -> bool:
        """No error and no evaluation that failed."""
        return self.error is None and all(e.passed is not False for e in self.evaluations)


@dataclass(frozen=True, slots=True)
class CaseRuns:
    """The runs of one recorded case in one ``regress`` call."""

    recorded_session: str
    runs: int
    passes: int
    failed_repetitions: tuple[int, ...]

    @property
    def pass_rate(self) -> float:
        return self.passes / self.runs if self.runs else 0.0


@dataclass(frozen=True, slots=True)
class RegressResult:
    """What ``regress`` did, run by run (``repeat`` runs of each case, in case order)."""

    agent_version: str
    baseline: str | None
    """The agent version most recorded runs of the suite were of: what to compare with."""
    criteria_version: str | None
    cases: tuple[RegressCase, ...]
    repeat: int = 1
    shard: tuple[int, int] | None = None
    """(I, N) when this call ran the I-th of N shards of the suite."""

    @property
    def out_of_bounds_calls(self) -> int:
        return sum(len(c.out_of_bounds) for c in self.cases)

    @property
    def failed(self) -> tuple[RegressCase, ...]:
        """Runs with an error or a failed evaluation."""
        return tuple(c for c in self.cases if not c.passed)

    def by_case(self) -> tuple[CaseRuns, ...]:
        """Runs and passes per recorded case, in case order."""
        grouped: dict[str, list[RegressCase]] = {}
        for c in self.cases:
            grouped.setdefault(c.recorded_session, []).append(c)
        return tuple(
            CaseRuns(
                case, len(runs), sum(1 for r in runs if r.passed), tuple(r.repetition for r in runs if not r.passed)
            )
            for case, runs in grouped.items()
        )


@dataclass(frozen=True, slots=True)
class RescoredSession:
    """One stored session judged again by ``rescore``."""

    session_id: str
    agent_version: str | None
    evaluations: tuple[Evaluation, ...]
    problems: tuple[str, ...] = ()
