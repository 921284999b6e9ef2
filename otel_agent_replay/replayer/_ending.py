"""The end of a replay: the recorded steps no run used, counted as divergences, then the verdict (a
divergence the agent swallowed raised again, one a library wrapped raised as itself, unused steps a
failure of a strict replay)."""

from __future__ import annotations

from otel_agent_replay.core import DivergenceKind, ReplayDivergence
from otel_agent_replay.tape import Step

from ._binding import RunBinder
from ._ledger import Ledger
from ._messages import Hints, unused_error

__all__ = ["count_unused", "settle"]


def count_unused(runs: RunBinder, ledger: Ledger) -> list[tuple[str, Step]]:
    """Every recorded step no live call used, by recorded run: each a divergence, and a run the agent
    never started one too."""
    unused: list[tuple[str, Step]] = []
    bound, leftover = runs.leftovers()
    for replay_run in bound:
        if replay_run.index is not None:
            unused.extend((replay_run.recorded_id, s) for s in replay_run.index.unused())
    for run in leftover:
        ledger.diverge(
            DivergenceKind.RUN_COUNT,
            run.run_id,
            run.agent_name,
            0,
            None,
            f"recorded run {run.run_id} ({run.agent_name}) was never replayed: the agent started fewer runs",
        )
        unused.extend((run.run_id, s) for s in runs.index(run).unused())
    for run_id, step in unused:
        message = f"{step.tool} (seq {step.seq}) was never called"
        ledger.diverge(DivergenceKind.UNUSED, run_id, step.tool, 0, step.seq, message)
    ledger.set_count("unused_entries", len(unused))
    return unused


def settle(
    ledger: Ledger,
    propagating: BaseException | None,
    unused: list[tuple[str, Step]],
    *,
    strict: bool,
    tape_path: str | None,
    hints: Hints,
) -> None:
    """Raise what the replay's end must: a divergence wrapped in the error leaving the block (as itself),
    else the first divergence raised and swallowed, else, when ``strict``, the unused steps."""
    __tracebackhide__ = True  # pytest shows the user's frames, not ours
    if propagating is not None:
        wrapped = wrapped_divergence(propagating, ledger.raised)
        if wrapped is not None:
            raise wrapped from propagating  # a library turned it into its own error (an SDK's retry)
        return
    if ledger.raised:
        raise ledger.raised[0]  # swallowed by the agent: the test must still fail
    if unused and strict:
        raise unused_error(unused, tape_path, hints)


def wrapped_divergence(error: BaseException, raised: list[ReplayDivergence]) -> BaseException | None:
    """A divergence this replay raised that ``error`` carries as its cause or context, if any."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if cause is not error and any(cause is r for r in raised):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None
