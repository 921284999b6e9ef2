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
    divergences: int = 0
    """What the replay noted and answered anyway: drift, out-of-bounds calls, order (see ``ReplaySession.report``)."""
    drift: int = 0
    """Calls made with other arguments than recorded (answered as ``on_drift="count"`` says)."""

    @property
    def outcome(self) -> str:
        """``error`` (a judge could not judge, or the run could not be stored), ``fail`` (the agent raised or
        an evaluation failed) or ``pass``."""
        if self.problems or self.session_id is None:
            return "error"
        if self.error is not None or any(e.passed is False for e in self.evaluations):
            return "fail"
        return "pass"

    @property
    def passed(self) -> bool:
        """Judged, with no error of the agent and no evaluation that failed."""
        return self.outcome == "pass"


@dataclass(frozen=True, slots=True)
class CaseRuns:
    """The runs of one recorded case in one ``regress`` call."""

    recorded_session: str
    runs: int
    passes: int
    failed_repetitions: tuple[int, ...]
    errors: int = 0
    """Runs that could not be judged (``outcome == "error"``): neither passes nor fails."""
    errored_repetitions: tuple[int, ...] = ()
    divergences: int = 0
    """Divergences over the case's runs."""

    @property
    def fails(self) -> int:
        return self.runs - self.passes - self.errors

    @property
    def pass_rate(self) -> float | None:
        """Passes over judged runs (errors left out); None when no run was judged."""
        judged = self.runs - self.errors
        return self.passes / judged if judged else None


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
        """Runs the agent failed: it raised, or an evaluation failed."""
        return tuple(c for c in self.cases if c.outcome == "fail")

    @property
    def errored(self) -> tuple[RegressCase, ...]:
        """Runs that could not be judged: a judge raised or gave no verdict, or the run was not stored."""
        return tuple(c for c in self.cases if c.outcome == "error")

    @property
    def passed(self) -> tuple[RegressCase, ...]:
        return tuple(c for c in self.cases if c.outcome == "pass")

    @property
    def divergences(self) -> int:
        return sum(c.divergences for c in self.cases)

    def by_case(self) -> tuple[CaseRuns, ...]:
        """Runs and passes per recorded case, in case order."""
        grouped: dict[str, list[RegressCase]] = {}
        for c in self.cases:
            grouped.setdefault(c.recorded_session, []).append(c)
        return tuple(
            CaseRuns(
                case, len(runs), sum(1 for r in runs if r.passed),
                tuple(r.repetition for r in runs if r.outcome == "fail"), sum(1 for r in runs if r.outcome == "error"),
                tuple(r.repetition for r in runs if r.outcome == "error"), sum(r.divergences for r in runs),
            )
            for case, runs in grouped.items()
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class RescoredSession:
    """One stored session judged again by ``rescore``."""

    session_id: str
    agent_version: str | None
    evaluations: tuple[Evaluation, ...]
    problems: tuple[str, ...] = ()
