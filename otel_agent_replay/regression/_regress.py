"""``regress``: run a new version of an agent on recorded sessions, offline; ``rescore``: judge stored sessions again.

For each recorded run of the suite (a folder of tapes, such as a golden set, or the sessions of
the store carrying a tag) ``regress`` calls the agent with the run's recorded input inside

- ``record`` of a temporary tape, so the new run is a recording like any other, and
- ``replay`` of the recorded run with ``on_miss="error_result"`` (a tool call the recording does
  not have is answered ``{"error": "unexpected_tool_call"}`` and counted), every tool that is not
  read-only stubbed with its recorded result (nothing outside the process is touched), unused
  recorded steps allowed (the new version may do less), model calls from the tape or live
  (``models=``). Drift stays drift: the agent sees ``TapeDrift``, and the case records it.

When the new run ends, while its span is still open, its ``agent_replay.agent_version`` is set to
``agent_version``, the evaluators judge the replayed behaviour (a ``RunView``) and each evaluation
is added to the span as a ``gen_ai.evaluation.result`` event, so it reaches the tape and any OTLP
backend. The new run is then ingested into the store (with the recorded session's tags) and its
evaluations written as ``eval_record`` rows. Running ``regress`` again under the same
``agent_version`` replaces that version's earlier run of each case (``Store.delete_session``), so
a re-run never counts a case twice.

The agent is called with the recorded input: a JSON object whose keys bind to the agent's
parameters is passed as keyword arguments (what ``@agent_run`` records for a decorated function
is its bound arguments), anything else as one positional argument, and no input as no argument.
The agent must start its own ``agent_run`` (a decorated function does). Tape data never names
anything to import or call: the agent is the caller's.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.trace import Span

from otel_agent_replay.comparison import RunView
from otel_agent_replay.core import ConfigurationError, ModelPolicy, ModelPolicyName, TapeNotFoundError
from otel_agent_replay.core import attributes as A
from otel_agent_replay.recorder import record
from otel_agent_replay.replayer import ReplaySession, replay
from otel_agent_replay.store import Evaluation, Store, open_store, write_session_tape
from otel_agent_replay.tape import Run, Tape, load_tape

from ._evaluators import Evaluator, evaluate

__all__ = ["RegressCase", "RegressResult", "RescoredSession", "regress", "rescore"]

StoreOption = Store | str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class RegressCase:
    """One recorded run, run again by the new version."""

    recorded_session: str
    """The recorded run's id (its session in the store, when it was ingested)."""
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

    @property
    def passed(self) -> bool:
        """No error and no evaluation that failed."""
        return self.error is None and all(e.passed is not False for e in self.evaluations)


@dataclass(frozen=True, slots=True)
class RegressResult:
    """What ``regress`` did, case by case."""

    agent_version: str
    baseline: str | None
    """The agent version most recorded runs of the suite were of: what to compare with."""
    criteria_version: str | None
    cases: tuple[RegressCase, ...]

    @property
    def out_of_bounds_calls(self) -> int:
        return sum(len(c.out_of_bounds) for c in self.cases)

    @property
    def failed(self) -> tuple[RegressCase, ...]:
        """Cases with an error or a failed evaluation."""
        return tuple(c for c in self.cases if not c.passed)


@dataclass(frozen=True, slots=True)
class RescoredSession:
    """One stored session judged again by ``rescore``."""

    session_id: str
    agent_version: str | None
    evaluations: tuple[Evaluation, ...]
    problems: tuple[str, ...] = ()


@contextmanager
def _opened(store: StoreOption) -> Iterator[Store]:
    if isinstance(store, Store):
        yield store
        return
    if not isinstance(store, (str, os.PathLike)):
        raise ConfigurationError(f"store={store!r}: give a Store, a SQLite path or a postgresql:// URL")
    with open_store(store) as opened:
        yield opened


def _suite(
    suite: str | os.PathLike[str] | None, store: Store, tag: str | None, agent_version: str, tmp: Path
) -> list[tuple[str, Run]]:
    """(tape, recorded run) of every complete run in the suite, in order."""
    paths: list[Path]
    if suite is not None:
        root = Path(suite)
        if root.is_dir():
            paths = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in (".jsonl", ".json"))
            if not paths:
                raise TapeNotFoundError(f"{root}: no tapes (*.jsonl, *.json) in this folder to run the agent on")
        elif root.is_file():
            paths = [root]
        else:
            raise TapeNotFoundError(f"{root}: no such folder or tape; give a folder of tapes (a golden set)")
    else:
        if tag is None:
            raise ConfigurationError("regress needs a suite: a folder of tapes, or tag= to take stored sessions")
        sessions = [
            s for s in store.sessions(tag=tag) if s.status in ("success", "failed") and s.agent_version != agent_version
        ]
        if not sessions:
            raise ConfigurationError(
                f"no finished sessions tagged {tag!r} in {store.location!r} (other than of {agent_version!r})"
            )
        paths = []
        for s in sessions:
            name = hashlib.sha256(s.session_id.encode("utf-8")).hexdigest()[:16] + ".jsonl"
            paths.append(write_session_tape(store, s.session_id, tmp / name))
    cases: list[tuple[str, Run]] = []
    for path in paths:
        tape = load_tape(path)
        cases.extend((str(path), run) for run in tape.runs if run.complete and run.mode != A.MODE_REPLAY)
    return cases


def _call_agent(agent: Callable[..., Any], recorded_input: Any) -> Any:
    try:
        signature: inspect.Signature | None = inspect.signature(agent)
    except (TypeError, ValueError):
        signature = None
    args: tuple[Any, ...] = () if recorded_input is None else (recorded_input,)
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

    def __init__(self, evaluators: tuple[Evaluator, ...], agent_version: str, criteria_version: str | None) -> None:
        self.evaluators = evaluators
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
        self.evaluations, self.problems = evaluate(
            self.session.view(), self.evaluators, criteria_version=self.criteria_version
        )
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
                side_effects="stub",
                allow_unused=True,
                models=models,
            ) as session,
        ):
            case.session = session
            session.on_run_end = case.on_run_end
            _call_agent(agent, recorded.input)
    except Exception as exc:
        return session, f"{type(exc).__name__}: {exc}"
    return session, None


def regress(
    suite: str | os.PathLike[str] | None,
    agent: Callable[..., Any],
    *,
    agent_version: str,
    store: StoreOption,
    evaluators: Iterable[Evaluator] = (),
    models: ModelPolicy | ModelPolicyName = "tape",
    tag: str | None = None,
    criteria_version: str | None = None,
) -> RegressResult:
    """Run ``agent`` (the new version) on every recorded run of ``suite``, offline, and store what it did.

    :param suite: a folder of tapes (a golden set) or one tape; or None with ``tag=`` to take the
        finished sessions of the store carrying that tag (other than of ``agent_version``).
    :param agent: the agent to call with each recorded input (it starts its own ``agent_run``).
    :param agent_version: the version the new runs are stored under.
    :param store: a ``Store``, a SQLite path or a ``postgresql://`` URL.
    :param evaluators: callables judging each new run's ``RunView`` (see ``tool_success`` …).
    :param models: ``tape`` (model calls replayed) or ``live``.
    :param tag: with a suite folder, a tag added to every new session.
    :param criteria_version: stamped on evaluations that carry none.
    """
    if not isinstance(agent_version, str) or not agent_version.strip():
        raise ConfigurationError("regress(agent_version=...): give the version the new runs are stored under")
    if not callable(agent):
        raise ConfigurationError(f"regress(agent={agent!r}): give the agent's function")
    judges = tuple(evaluators)
    for judge in judges:
        if not callable(judge):
            raise ConfigurationError(f"regress(evaluators=...): {judge!r} is not callable")
    with _opened(store) as db, tempfile.TemporaryDirectory(prefix="otel-agent-replay-regress-") as tmp_name:
        tmp = Path(tmp_name)
        runs = _suite(suite, db, tag if suite is None else None, agent_version, tmp)
        versions = Counter(
            run.agent_version for _, run in runs if run.agent_version and run.agent_version != agent_version
        )
        baseline = versions.most_common(1)[0][0] if versions else None
        earlier: dict[str, list[str]] = {}
        for s in db.sessions(agent_version=agent_version):
            replayed = s.extra.get("replay_of")
            if isinstance(replayed, str):
                earlier.setdefault(replayed, []).append(s.session_id)
        cases = [
            _one(db, agent, source, run, tmp / f"run-{i}.jsonl", judges, agent_version, models, tag, criteria_version)
            for i, (source, run) in enumerate(runs)
        ]
        for case in cases:
            if case.session_id is not None:  # this version's earlier run of the case is replaced, not counted twice
                for old in earlier.get(case.recorded_session, ()):
                    if old != case.session_id:
                        db.delete_session(old)
    return RegressResult(agent_version, baseline, criteria_version, tuple(cases))


def _one(
    db: Store,
    agent: Callable[..., Any],
    source: str,
    recorded: Run,
    out: Path,
    judges: tuple[Evaluator, ...],
    agent_version: str,
    models: ModelPolicy | ModelPolicyName,
    tag: str | None,
    criteria_version: str | None,
) -> RegressCase:
    case = _Case(judges, agent_version, criteria_version)
    session, error = _run_case(agent, source, recorded, out, case, models)
    oob = session.out_of_bounds if session is not None else ()
    evaluations = tuple(case.evaluations)

    def failed(why: str) -> RegressCase:
        return RegressCase(recorded.run_id, source, None, "error", oob, evaluations, why, tuple(case.problems))

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
    return RegressCase(recorded.run_id, source, new.run_id, status, oob, evaluations, error, tuple(case.problems))


def rescore(
    store: StoreOption,
    evaluators: Iterable[Evaluator],
    *,
    criteria_version: str,
    tag: str | None = None,
    agent_version: str | None = None,
) -> tuple[RescoredSession, ...]:
    """Judge stored sessions again under ``criteria_version``, without running the agent.

    Sessions (finished ones, filtered by ``tag`` and ``agent_version``) are left as they are; each
    evaluation is a new ``eval_record`` row beside those of other criteria versions (the same
    metric under the same criteria version replaces its row). So a change of criteria has its own
    baseline: ``report_rows(..., criteria_version=...)`` compares versions under one criteria.
    """
    if not isinstance(criteria_version, str) or not criteria_version.strip():
        raise ConfigurationError("rescore(criteria_version=...): give the version of the new criteria")
    judges = tuple(evaluators)
    if not judges:
        raise ConfigurationError("rescore needs at least one evaluator")
    out: list[RescoredSession] = []
    with _opened(store) as db, tempfile.TemporaryDirectory(prefix="otel-agent-replay-rescore-") as tmp_name:
        sessions = [s for s in db.sessions(tag=tag, agent_version=agent_version) if s.status in ("success", "failed")]
        for i, s in enumerate(sessions):
            path = write_session_tape(db, s.session_id, Path(tmp_name) / f"session-{i}.jsonl")
            view = RunView(load_tape(path).run(s.session_id))
            evaluations, problems = evaluate(view, judges, criteria_version=criteria_version)
            if evaluations:
                db.add_evals(s.session_id, evaluations)
            out.append(RescoredSession(s.session_id, s.agent_version, tuple(evaluations), tuple(problems)))
    return tuple(out)
