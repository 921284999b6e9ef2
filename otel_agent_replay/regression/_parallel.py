"""Past one process and one machine: ``workers=N`` runs a regression's runs in N processes, and
``shard=(I, N)`` keeps the I-th of N deterministic slices of the cases.

Workers are forked from a fork server (never from the caller: its threads, exporters and
connections stay its own), which imports this package and the agent's module once, so N workers
do not each pay the imports. Each opens the store itself (a ``Store`` is one connection, one per
process) and writes the runs it makes; the agent and the evaluators reach the workers pickled, so
they must be module-level functions or other picklable callables (the command line's
``module:function`` names are). Starting the workers costs about one fresh interpreter importing
the agent (seconds), so workers pay off when the runs' model time is well above that.

Shards split the suite's cases round robin in suite order (the tapes sorted by name, the runs
in tape order): case i belongs to shard ``i % N + 1``. Every machine of a CI matrix lists the
same suite, so N shards cover each case exactly once, and all of them may write into one
PostgreSQL store: ``report`` reads the union.

The fork server is multiprocessing's, one per process and long-lived: started by an earlier
``regress`` or by anything else that used the forkserver method (a block's forkserver children), it
holds the environment of that moment, and what it forks starts with that one, not the caller's now.
So each worker takes the caller's environment as it is when ``regress`` starts (a variable set since,
one removed since) before it runs anything, keeping what the block it joined gave it (``regress``
called inside ``record()``/``replay()``: the proxy's variables); what a module read from the
environment at its import stays as imported.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import pickle
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Final

from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.core import attributes as A
from otel_agent_replay.proxy import joined_environment
from otel_agent_replay.store import Store, open_store
from otel_agent_replay.tape import Run, load_tape

from ._cases import CaseJob, run_one
from ._results import RegressCase

__all__ = ["Unit", "check_picklable", "parse_shard", "run_parallel", "run_units"]

Unit = tuple[str, Run, str, int]
"""(tape, recorded run, the new run's temporary tape, repetition)."""

_SHARD: Final = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_WORKER: dict[str, Any] = {}


def parse_shard(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``"2/4"`` or ``(2, 4)`` → (2, 4), checked: 1 ≤ I ≤ N."""
    if shard is None:
        return None
    if isinstance(shard, str):
        match = _SHARD.match(shard)
        if match is None:
            raise ConfigurationError(f"shard {shard!r}: write I/N, the I-th of N shards (e.g. 2/4)")
        index, count = int(match.group(1)), int(match.group(2))
    else:
        try:
            index, count = (int(v) for v in shard)
        except (TypeError, ValueError):
            raise ConfigurationError(f"shard={shard!r}: give (I, N) or 'I/N', the I-th of N shards") from None
    if count < 1 or not 1 <= index <= count:
        raise ConfigurationError(f"shard {index}/{count}: I must be from 1 to N, and N 1 or more (e.g. 1/4 … 4/4)")
    return index, count


def run_units(db: Store, job: CaseJob, units: list[Unit]) -> list[RegressCase]:
    """Every unit, one after the other, in this process."""
    return [run_one(db, job, source, recorded, Path(out), rep) for source, recorded, out, rep in units]


def _start(location: str, job: CaseJob, environment: dict[str, str]) -> None:
    os.environ.clear()  # forked from a fork server that may be older than this call: the caller's environment
    os.environ.update({**environment, **joined_environment()})
    store = open_store(location)
    atexit.register(store.close)
    _WORKER.update(store=store, job=job, tapes={})


def _recorded(source: str, run_id: str) -> Run:
    tapes: dict[str, dict[str, Run]] = _WORKER["tapes"]
    if source not in tapes:
        runs = load_tape(source).runs
        tapes[source] = {r.run_id: r for r in runs if r.complete and r.mode != A.MODE_REPLAY}
    return tapes[source][run_id]


def _work(unit: tuple[str, str, str, int]) -> RegressCase:
    source, run_id, out, repetition = unit
    return run_one(_WORKER["store"], _WORKER["job"], source, _recorded(source, run_id), Path(out), repetition)


def check_picklable(job: CaseJob, workers: int) -> None:
    """``ConfigurationError`` when the agent or an evaluator cannot reach a worker process."""
    try:
        pickle.dumps(job)
    except Exception as exc:
        raise ConfigurationError(
            f"regress(workers={workers}): the agent and the evaluators go to worker processes, and one cannot be "
            f"pickled ({type(exc).__name__}: {exc}); give module-level functions (or name them module:function "
            "on the command line), or run with workers=1"
        ) from None


def run_parallel(location: str, job: CaseJob, units: list[Unit], workers: int) -> list[RegressCase]:
    """The units in ``workers`` spawned processes, each with its own connection to the store at ``location``."""
    check_picklable(job, workers)
    context = multiprocessing.get_context("forkserver")
    # The fork server imports these once; each worker is forked from it, not started afresh.
    modules = {getattr(f, "__module__", None) for f in (job.agent, *job.judges)} | {__name__}
    context.set_forkserver_preload(sorted(m for m in modules if isinstance(m, str) and m != "__main__"))
    work = [(source, recorded.run_id, out, rep) for source, recorded, out, rep in units]
    with ProcessPoolExecutor(
        max_workers=min(workers, len(work)),
        mp_context=context,
        initializer=_start,
        initargs=(location, job, dict(os.environ)),
    ) as pool:
        return list(pool.map(_work, work))
