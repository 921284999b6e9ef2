"""``regress``: run a new version of an agent on recorded sessions, offline; ``rescore``: judge stored sessions again.

For each recorded run of the suite (a folder of tapes, such as a golden set, or the sessions of
the store carrying a tag) ``regress`` calls the agent with the run's recorded input inside

- ``record`` of a temporary tape, so the new run is a recording like any other, and
- ``replay`` of the recorded run with ``on_miss="error_result"`` (a tool call the recording does
  not have is answered ``{"error": "unexpected_tool_call"}`` and counted), every tool that is not
  read-only stubbed with its recorded result (nothing outside the process is touched), unused
  recorded steps allowed (the new version may do less), model calls from the tape or live
  (``models=``), and ``on_drift="count"``: runs are judged on outcomes. With the model live, the
  arguments it writes vary by nature, so a read-only tool is answered from the tape by tool and
  arguments at any position (other arguments: the out-of-bounds answer), a tool that is not
  read-only by its recorded call at its position (never run), and each such divergence is counted
  on the run (``agent_replay.divergences``) instead of failing it. ``drift="fail"`` makes drift fail
  a run (a ``no_drift`` evaluation) for whoever wants the old strictness.

When the new run ends, while its span is still open, its ``agent_replay.agent_version`` is set to
``agent_version``, the evaluators judge the replayed behaviour (a ``RunView``) and each evaluation
is added to the span as a ``gen_ai.evaluation.result`` event, so it reaches the tape and any OTLP
backend. An evaluator that raises, returns nothing or returns something that is not an
``Evaluation`` makes the run ``error`` (``agent_replay.judge_errors`` on its span), never a pass.
The new run is then ingested into the store (with the recorded session's tags) and its
evaluations written as ``eval_record`` rows. Running ``regress`` again under the same
``agent_version`` replaces that version's earlier runs of each case it ran (``Store.delete_session``),
so a re-run never counts a case twice.

``repeat=k`` runs each case k times; each run's span carries ``agent_replay.repetition`` (1 to k)
and its session is stored with the case (the recorded run it replays) and that number, what
``report`` turns into a pass rate per case and version and a verdict between versions.
``workers`` and ``shard`` spread the runs over processes and machines (see ``_parallel``).

The agent is called with the recorded input: a JSON object whose keys bind to the agent's
parameters is passed as keyword arguments (what ``@agent_run`` records for a decorated function
is its bound arguments), anything else as one positional argument, and no input as no argument.
The agent must start its own ``agent_run`` (a decorated function does). Tape data never names
anything to import or call: the agent is the caller's.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from otel_agent_replay.comparison import RunView
from otel_agent_replay.core import ConfigurationError, ModelPolicy, ModelPolicyName, TapeNotFoundError
from otel_agent_replay.core import attributes as A
from otel_agent_replay.store import Store, open_store, write_session_tape
from otel_agent_replay.tape import Run, load_tape

from ._cases import CaseJob, DriftRule
from ._evaluators import Evaluator, evaluate
from ._parallel import Unit, check_picklable, parse_shard, run_parallel, run_units
from ._results import RegressResult, RescoredSession

__all__ = ["regress", "rescore"]

StoreOption = Store | str | os.PathLike[str]


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


def regress(
    suite: str | os.PathLike[str] | None,
    agent: Callable[..., Any],
    *,
    agent_version: str,
    store: StoreOption,
    evaluators: Iterable[Evaluator] = (),
    models: ModelPolicy | ModelPolicyName | None = None,
    tag: str | None = None,
    criteria_version: str | None = None,
    repeat: int = 1,
    workers: int = 1,
    shard: str | tuple[int, int] | None = None,
    drift: DriftRule = "count",
) -> RegressResult:
    """Run ``agent`` (the new version) on every recorded run of ``suite``, offline, and store what it did.

    :param suite: a folder of tapes (a golden set) or one tape; or None with ``tag=`` to take the
        finished sessions of the store carrying that tag (other than of ``agent_version``).
    :param agent: the agent to call with each recorded input (it starts its own ``agent_run``).
    :param agent_version: the version the new runs are stored under.
    :param store: a ``Store``, a SQLite path or a ``postgresql://`` URL.
    :param evaluators: callables judging each new run's ``RunView`` (see ``tool_success`` …).
    :param models: ``tape`` (model calls replayed) or ``live``; by default ``tape`` for one run of
        each case and ``live`` with ``repeat`` above 1 (a replayed model would only repeat itself).
    :param tag: with a suite folder, a tag added to every new session.
    :param criteria_version: stamped on evaluations that carry none.
    :param repeat: runs of each case (k); each is stored with its repetition number (1 to k), so
        ``report`` gives per case a pass rate and, between versions, a verdict. Repetitions are
        live models (the default then): tools stay replayed, only the model runs again.
    :param workers: processes to run the runs in (spawned; the agent and evaluators are pickled).
    :param shard: ``"I/N"`` or ``(I, N)``: run only the I-th of N deterministic slices of the cases.
    :param drift: ``count`` (the default): a tool called with other arguments than recorded is answered
        (a read-only tool out of bounds, one that is not read-only with its recorded call at that
        position, never run) and counted in the run's divergences, and the run is judged by the
        evaluators alone; ``fail``: a run with drift fails too (a ``no_drift`` evaluation).
    """
    if not isinstance(agent_version, str) or not agent_version.strip():
        raise ConfigurationError("regress(agent_version=...): give the version the new runs are stored under")
    if not callable(agent):
        raise ConfigurationError(f"regress(agent={agent!r}): give the agent's function")
    for name, value in (("repeat", repeat), ("workers", workers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(f"regress({name}={value!r}): give a whole number, 1 or more")
    if drift not in ("count", "fail"):
        raise ConfigurationError(f"regress(drift={drift!r}): give 'count' (judge on outcomes) or 'fail'")
    sliced = parse_shard(shard)
    judges = tuple(evaluators)
    for judge in judges:
        if not callable(judge):
            raise ConfigurationError(f"regress(evaluators=...): {judge!r} is not callable")
    if models is None:
        models = "live" if repeat > 1 else "tape"
    job = CaseJob(agent, judges, agent_version, models, tag, criteria_version, drift)
    if workers > 1:
        check_picklable(job, workers)
    with _opened(store) as db, tempfile.TemporaryDirectory(prefix="otel-agent-replay-regress-") as tmp_name:
        location = _location(store, db) if workers > 1 else ""
        tmp = Path(tmp_name)
        runs = _suite(suite, db, tag if suite is None else None, agent_version, tmp)
        versions = Counter(
            run.agent_version for _, run in runs if run.agent_version and run.agent_version != agent_version
        )
        baseline = versions.most_common(1)[0][0] if versions else None
        if sliced is not None:
            runs = [case for i, case in enumerate(runs) if i % sliced[1] == sliced[0] - 1]
        mine = {run.run_id for _, run in runs}
        earlier: dict[str, list[str]] = {}
        for s in db.sessions(agent_version=agent_version):
            replayed = s.extra.get("replay_of")
            if isinstance(replayed, str) and replayed in mine:
                earlier.setdefault(replayed, []).append(s.session_id)
        units: list[Unit] = [
            (source, run, str(tmp / f"run-{i}-{rep}.jsonl"), rep)
            for i, (source, run) in enumerate(runs)
            for rep in range(1, repeat + 1)
        ]
        if workers > 1 and len(units) > 1:
            cases = run_parallel(location, job, units, workers)
        else:
            cases = run_units(db, job, units)
        new = {c.session_id for c in cases if c.session_id is not None}
        stored = {c.recorded_session for c in cases if c.session_id is not None}
        for recorded_session in stored:  # this version's earlier runs of the case are replaced, not counted twice
            for old in earlier.get(recorded_session, ()):
                if old not in new:
                    db.delete_session(old)
    return RegressResult(agent_version, baseline, criteria_version, tuple(cases), repeat, sliced)


def _location(given: StoreOption, db: Store) -> str:
    """Where worker processes open the store: the path or URL given, or an open SQLite store's file."""
    if isinstance(given, (str, os.PathLike)):
        return os.fspath(given)
    if db.dialect == "sqlite":
        return db.location
    raise ConfigurationError(
        "regress(workers=...) with a PostgreSQL Store: each worker opens its own connection, so pass the "
        "postgresql:// URL as store= rather than an open Store"
    )


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
