"""One run of the agent on one recorded run: called with the recorded input inside ``record`` of a
temporary tape and ``replay`` of the recording (tools replayed, out-of-bounds calls answered, drift
answered and counted), judged when its run ends, and stored (see ``_regress``).

``call_agent`` is how every command calls a user's agent with a recorded run's input (``regress``,
``fork``)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from opentelemetry.trace import Span

from otel_agent_replay.core import ModelPolicy, ModelPolicyName
from otel_agent_replay.core import attributes as A
from otel_agent_replay.recorder import record
from otel_agent_replay.replayer import ReplaySession, replay
from otel_agent_replay.store import Evaluation, Store
from otel_agent_replay.tape import Run, Tape, load_tape

from ._evaluators import Evaluator, evaluate
from ._results import RegressCase

__all__ = ["CaseJob", "DriftRule", "call_agent", "run_one"]

DriftRule = Literal["count", "fail"]
"""``count``: a drifted call is answered and counted, the run judged by the evaluators alone; ``fail``:
a run with drift also fails (a ``no_drift`` evaluation)."""


def call_agent(agent: Callable[..., Any], recorded_input: Any) -> Any:
    """Call ``agent`` with a recorded run's input: a JSON object whose keys bind to its parameters as keyword
    arguments, anything else as one positional argument, no input (or a function of no parameters) as none;
    a coroutine is run to its end."""
    try:
        signature: inspect.Signature | None = inspect.signature(agent)
    except (TypeError, ValueError):
        signature = None
    args: tuple[Any, ...] = () if recorded_input is None else (recorded_input,)
    if signature is not None and args and not signature.parameters:
        args = ()  # a function of no arguments is called with none
    kwargs: dict[str, Any] = {}
    if isinstance(recorded_input, Mapping) and signature is not None:
        try:
            signature.bind(**recorded_input)
        except TypeError:
            pass
        else:
            args, kwargs = (), dict(recorded_input)
    result = agent(*args, **kwargs)
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    return result


def _no_drift(drift_events: int, criteria_version: str | None) -> Evaluation:
    """What ``drift="fail"`` adds to a run's evaluations."""
    why = f"{drift_events} tool call(s) drifted from the recording" if drift_events else "no call drifted"
    return Evaluation(
        "no_drift", score=float(drift_events), passed=not drift_events, explanation=why,
        criteria_version=criteria_version,
    )  # fmt: skip


def _event_attributes(ev: Evaluation) -> dict[str, Any]:
    attrs: dict[str, Any] = {A.GEN_AI_EVALUATION_NAME: ev.metric}
    if ev.score is not None:
        attrs[A.GEN_AI_EVALUATION_SCORE_VALUE] = float(ev.score)
    if ev.passed is not None:
        attrs[A.GEN_AI_EVALUATION_SCORE_LABEL] = "pass" if ev.passed else "fail"
    if ev.explanation:
        attrs[A.GEN_AI_EVALUATION_EXPLANATION] = ev.explanation
    if ev.judge_model:
        attrs[A.EVALUATION_JUDGE_MODEL] = ev.judge_model
    if ev.criteria_version:
        attrs[A.EVALUATION_CRITERIA_VERSION] = ev.criteria_version
    return attrs


class _Case:
    """The state of one case while the agent runs: filled in by the end-of-run hook."""

    def __init__(
        self,
        evaluators: tuple[Evaluator, ...],
        agent_version: str,
        criteria_version: str | None,
        repetition: int,
        drift: DriftRule = "count",
    ) -> None:
        self.evaluators = evaluators
        self.drift = drift
        self.divergences = 0
        self.drift_events = 0
        self.repetition = repetition
        self.agent_version = agent_version
        self.criteria_version = criteria_version
        self.session: ReplaySession | None = None
        self.ended = False
        self.evaluations: list[Evaluation] = []
        self.problems: list[str] = []

    def on_run_end(self, span: Span, output: object) -> None:
        assert self.session is not None
        self.ended = True
        span.set_attribute(A.AGENT_VERSION, self.agent_version)
        span.set_attribute(A.REPETITION, self.repetition)
        self.divergences = len(self.session.report)
        self.drift_events = int(self.session.stats["drift_events"])
        span.set_attribute(A.DIVERGENCES, self.divergences)
        self.evaluations, self.problems = evaluate(
            self.session.view(), self.evaluators, criteria_version=self.criteria_version
        )
        if self.drift == "fail":
            self.evaluations.append(_no_drift(self.drift_events, self.criteria_version))
        if self.problems:
            span.set_attribute(A.JUDGE_ERRORS, list(self.problems))
        for ev in self.evaluations:
            span.add_event(A.EVALUATION_EVENT, _event_attributes(ev))


def _run_case(
    agent: Callable[..., Any],
    source: str,
    recorded: Run,
    out: Path,
    case: _Case,
    models: ModelPolicy | ModelPolicyName,
) -> tuple[ReplaySession | None, str | None]:
    """Run the agent on one recorded run; the session and what was raised (as text)."""
    session: ReplaySession | None = None
    try:
        with (
            record(out),
            replay(
                source,
                run_id=recorded.run_id,
                on_miss="error_result",
                on_drift="count",
                side_effects="stub",
                allow_unused=True,
                models=models,
            ) as session,
        ):
            case.session = session
            session.on_run_end = case.on_run_end
            call_agent(agent, recorded.input)
    except Exception as exc:
        return session, f"{type(exc).__name__}: {exc}"
    return session, None


@dataclass(frozen=True, slots=True)
class CaseJob:
    """What every run of a ``regress`` call shares: the agent, its judges and where the runs go."""

    agent: Callable[..., Any]
    judges: tuple[Evaluator, ...]
    agent_version: str
    models: ModelPolicy | ModelPolicyName
    tag: str | None
    criteria_version: str | None
    drift: DriftRule = "count"


def run_one(db: Store, job: CaseJob, source: str, recorded: Run, out: Path, repetition: int) -> RegressCase:
    """Run the agent once on one recorded run, judge the new run and store it under its repetition number."""
    agent, judges, agent_version = job.agent, job.judges, job.agent_version
    models, tag, criteria_version = job.models, job.tag, job.criteria_version
    case = _Case(judges, agent_version, criteria_version, repetition, job.drift)
    session, error = _run_case(agent, source, recorded, out, case, models)
    oob = session.out_of_bounds if session is not None else ()
    evaluations = tuple(case.evaluations)

    def failed(why: str) -> RegressCase:
        return RegressCase(
            recorded.run_id, source, None, "error", oob, evaluations, why, tuple(case.problems), repetition,
            case.divergences, case.drift_events,
        )  # fmt: skip

    if not case.ended:
        return failed(
            error
            or f"the agent started no agent_run for recorded run {recorded.run_id}: decorate it with "
            "@agent_run(...) or open one inside it"
        )
    new_runs = [r for r in load_tape(out).runs if r.replay_of == recorded.run_id] if out.exists() else []
    if len(new_runs) != 1:
        return failed(error or f"{len(new_runs)} runs replayed recorded run {recorded.run_id}; expected one")
    new = new_runs[0]
    try:
        existing = db.session(new.run_id)
    except KeyError:
        existing = None
    if existing is not None and existing.agent_version != agent_version:
        return failed(
            f"the new run's id {new.run_id!r} is already a session of version {existing.agent_version!r}: "
            "let agent_run mint run ids (do not pass run_id=) so each run is its own session"
        )
    try:
        tags: list[str] = list(db.session(recorded.run_id).tags)
    except KeyError:
        tags = []
    if tag is not None:
        tags.append(tag)
    db.ingest(Tape(str(out), (new,)), tags=tags)
    if evaluations:
        db.add_evals(new.run_id, evaluations)
    status = db.session(new.run_id).status
    return RegressCase(
        recorded.run_id, source, new.run_id, status, oob, evaluations, error, tuple(case.problems), repetition,
        case.divergences, case.drift_events,
    )  # fmt: skip
