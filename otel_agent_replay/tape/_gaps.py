"""Lines removed from a tape: what ``check`` finds in a run that the loader takes as it is.

A run recorded by otel-agent-replay numbers its steps 1, 2, 3 … (``agent_replay.seq``), and a step
made inside another step names it (``agent_replay.parent_step_id``); its span's parent is a span of
the same recording. So a line removed from the middle of a run leaves a gap in the sequence, a step
whose parent step is gone, or a step whose parent span is not on the tape. The run span counts the steps
the run started (``agent_replay.run.steps``, written as it ends), so the last steps cannot go without a
trace either; a run recorded before that count existed is checked without it. Steps appended later by
``new_episodes`` come after the count, so the count is what the tape must reach, not what it must equal.
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_agent_replay.core import attributes as A

from ._values import Run


def ranges(numbers: list[int]) -> str:
    """``3, 5-7``: ascending numbers, runs of them as ranges."""
    parts: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(parts)


def removed_lines(run: Run, spans: Mapping[str, int] | None) -> list[tuple[str, str]]:
    """What is missing from ``run``, each as (the span id of the step it shows at, what is missing).

    ``spans``: the id of every span on the tape (None: not known, so a step's parent span is not looked for).
    A run whose run span is not on the tape is incomplete, which says more: its steps' parents are not
    looked for either.
    """
    found: list[tuple[str, str]] = []
    seqs = sorted({s.seq for s in run.steps})
    missing = sorted(set(range(1, seqs[-1] + 1)) - set(seqs)) if seqs else []
    counted = run.attributes.get(A.RUN_STEPS)
    # the steps of ours only: the loader numbers another instrumentation's steps after them
    last = max((s.seq for s in run.steps if A.RUN_ID in s.attributes), default=0)
    if type(counted) is int and counted > last:
        found.append(
            (
                run.span_id,
                f"run {run.run_id} ended with {counted} step(s) ({A.RUN_STEPS} on its run span) but the tape has "
                f"none after seq {last}: the line(s) of seq {ranges(list(range(last + 1, counted + 1)))} were removed "
                "from the tape, and a replay would miss those calls; re-record the run",
            )
        )
    if missing:
        after = next(s for s in run.steps if s.seq > missing[0])
        found.append(
            (
                after.span_id,
                f"run {run.run_id} has no step with seq {ranges(missing)} (its steps go up to seq {seqs[-1]}): lines "
                "were removed from the tape, and a replay would take the agent for changed; re-record the run",
            )
        )
    ids = {s.step_id for s in run.steps}
    for step in run.steps:
        if step.parent_step_id and step.parent_step_id not in ids:
            found.append(
                (
                    step.span_id,
                    f"step {step.step_id} (seq {step.seq}) of run {run.run_id} was made inside step "
                    f"{step.parent_step_id}, which is not on the tape (its line was removed); re-record the run",
                )
            )
        elif spans is not None and run.complete and A.RUN_ID in step.attributes and step.parent_span_id not in spans:
            found.append(
                (
                    step.span_id,
                    f"step {step.step_id} (seq {step.seq}) of run {run.run_id} has a parent span "
                    f"{step.parent_span_id or '(none)'} that is not on the tape (its line was removed); re-record "
                    "the run",
                )
            )
    return found


__all__ = ["ranges", "removed_lines"]
