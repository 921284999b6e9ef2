"""The replay errors' messages: what happened, both sides, where, and the fix.

In the manner of good cassette libraries: name the run and position, show the
recorded and live arguments with the field-level difference, list the nearest
recordings, and end with the command or option that fixes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from otel_agent_replay.comparison import describe, json_changes, short
from otel_agent_replay.core import RecordMode, SideEffect, SideEffectRefused, StepKind, TapeDrift, TapeMiss, TapeUnused
from otel_agent_replay.tape import Step

if TYPE_CHECKING:
    from otel_agent_replay.instrumentation import Prepared, ToolSpec

_LONG = 160


@dataclass(frozen=True)
class Hints:
    """How a fix is spelled where the replay runs, so every hint is runnable as printed.

    The default speaks the Python API (``replay(..., mode='all')``, ``stub=(...)``); the pytest
    plugin gives each test's replay one that speaks its options and marker.
    """

    def mode(self, mode: str) -> str:
        """How to replay (or record) again in ``mode``."""
        return f"replay(..., mode={mode!r})"

    def option(self, text: str) -> str:
        """How to pass one replay option, given as ``name=value``."""
        return f"replay(..., {text})"


API_HINTS = Hints()
"""Hints in the Python API's words."""


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st …"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _run_label(bound: Any) -> str:
    index = getattr(bound, "index", None)
    if index is None:
        return "a run the tape does not have"
    run = index.run
    return f"run {run.run_id} ({run.agent_name or 'agent'})"


def drift_error(
    bound: Any, recorded: Step, spec: ToolSpec, prep: Prepared, n: int, mode: RecordMode, hints: Hints = API_HINTS
) -> TapeDrift:
    """Same tool at the same position, other arguments."""
    changes = json_changes(recorded.args, prep.captured.value)
    return TapeDrift(
        f"{recorded.step_id}: drift in {_run_label(bound)}: the {ordinal(n)} call of {spec.name} "
        f"(live seq {prep.ids.seq}, recorded seq {recorded.seq}) has other arguments than recorded\n"
        f"  recorded {recorded.call_key}  {short(recorded.args, _LONG)}\n"
        f"  live     {prep.captured.call_key}  {short(prep.captured.value, _LONG)}\n"
        f"  differs  {describe(changes)}\n"
        f"Replay mode {mode.value!r}: drift is the regression signal and is never recorded over. If the change is "
        f"intended, re-record the tape: {hints.mode('all')}."
    )


def miss_error(
    bound: Any,
    spec: ToolSpec,
    prep: Prepared,
    n: int,
    mode: RecordMode,
    tape_path: str | None,
    hints: Hints = API_HINTS,
) -> TapeMiss:
    """Neither the key nor the position is on the tape."""
    index = getattr(bound, "index", None)
    lines = [
        f"miss in {_run_label(bound)}: the {ordinal(n)} call of {spec.name} (live seq {prep.ids.seq}) is not on "
        f"the tape {tape_path or ''}".rstrip(),
        f"  live     {prep.captured.call_key}  {short(prep.captured.value, _LONG)}",
    ]
    nearest = index.nearest(spec.name, prep.captured.value) if index is not None else []
    if index is None:
        run = prep.run
        who = f"run {run.run_id} ({run.agent_name})" if run.agent_name else "this call's run"
        lines[0] = (
            f"miss: the {ordinal(n)} call of {spec.name} (live seq {prep.ids.seq}) belongs to {who}, which has no "
            f"recorded run left on {tape_path or 'the tape'} to replay: the agent started more runs than were "
            "recorded (or made this call after every recorded run was replayed)"
        )
        lines.append("  every recorded run was already bound to a live one")
    elif nearest:
        lines.append(f"  nearest recorded calls of {spec.name}:")
        for step, changes in nearest:
            lines.append(f"    seq {step.seq} {step.step_id}  {describe(changes, 4)}")
    else:
        lines.append(f"  the recorded run has no call of {spec.name}")
    if spec.side_effect == SideEffect.READ_ONLY:
        fix = (
            f"run it once, live, and append it to the tape: {hints.mode('new_episodes')}; or serve it from a "
            f"fake: {hints.option(f'fallbacks={{{spec.name!r}: fake}}')}; or re-record the tape: {hints.mode('all')}."
        )
    else:
        fix = (
            f"{spec.name} is not read-only, so no mode runs it during a replay: re-record the tape: "
            f"{hints.mode('all')}; or serve it from a fake: {hints.option(f'fallbacks={{{spec.name!r}: fake}}')}."
        )
    if spec.kind == StepKind.HTTP:
        host = spec.name.split(" ", 1)[-1].split("/", 1)[0]
        fix += (
            f" A request the tape does not answer is never sent, whatever the host (loopback too); to let this "
            f"host's HTTP go live, unrecorded: {hints.option(f'passthrough=[{host!r}]')}."
        )
    lines.append(f"Replay mode {mode.value!r}. To fix: {fix}")
    return TapeMiss("\n".join(lines))


def no_fallback_error(
    bound: Any, spec: ToolSpec, prep: Prepared, n: int, forked: str, hints: Hints = API_HINTS
) -> TapeMiss:
    """A call at or after a ``then="fallbacks"`` fork of a tool ``fallbacks=`` gives no fake for; ``forked``
    says which (``is where the replay forked (…)``, ``came after the replay forked at search#2``)."""
    fake = hints.option(f"fallbacks={{{spec.name!r}: fake}}")
    live = hints.option("then='live'")
    return TapeMiss(
        f"{spec.name} in {_run_label(bound)} (its {ordinal(n)} call, live seq {prep.ids.seq}) {forked}, and "
        f"then='fallbacks' sends every call from the fork on to its fake in fallbacks=, but fallbacks= has "
        f"none for {spec.name}\n  live     {prep.captured.call_key}  {short(prep.captured.value, _LONG)}\n"
        f"To fix: give {spec.name} a fake: {fake}; or let the calls after the fork run live (read-only tools and "
        f"models): {live}."
    )


def refused_error(tool: str, declared: SideEffect | None, run_id: str, hints: Hints = API_HINTS) -> SideEffectRefused:
    """A tool that is not read-only was called during a replay."""
    what = (
        f"declares side_effect={declared.value!r}" if declared else "declares no side effect (treated as not read-only)"
    )
    stub = hints.option(f"stub=({tool!r},)")
    stub_all = hints.option("side_effects='stub'")
    declare = hints.option(f"declare={{{tool!r}: 'read_only'}}")
    fix = (
        f"To get its recorded result without running it: {stub} (or, for every such tool, {stub_all})."
        if declared
        else f"If it only reads, declare it: @tool(side_effect='read_only') or {declare}; to get its recorded "
        f"result without running it: {stub}."
    )
    where = f" in run {run_id}" if run_id else ""
    return SideEffectRefused(f"{tool}{where} {what}, so it never runs during a replay. {fix}")


def unused_error(unused: list[tuple[str, Step]], tape_path: str | None, hints: Hints = API_HINTS) -> TapeUnused:
    """Recorded steps the replay never asked for."""
    lines = [f"{len(unused)} recorded step(s) on {tape_path or 'the tape'} were never called:"]
    for run_id, step in unused[:12]:
        lines.append(f"  run {run_id} seq {step.seq} {step.step_id}  {short(step.args, 80)}")
    if len(unused) > 12:
        lines.append(f"  … and {len(unused) - 12} more")
    lines.append(
        f"The agent took a shorter path than recorded. If that is intended, re-record the tape: {hints.mode('all')}; "
        f"or let steps go unused: {hints.option('allow_unused=True')}."
    )
    return TapeUnused("\n".join(lines))


def outside_error(tool: str, read_only: bool, tape_path: str | None) -> SideEffectRefused:
    """A decorated call made from a context that carries no replay while a replay is active."""
    allow = (
        f" {tool} is read-only: to let read-only tools run live there, pass replay(..., outside_calls='read_only')."
        if read_only
        else ""
    )
    return SideEffectRefused(
        f"{tool} was called from a thread or task that does not carry the replay's context, while the replay of "
        f"{tape_path or 'a loaded tape'} is active, so the replay cannot serve it and it would run for real. A "
        "threading.Thread, a ThreadPoolExecutor.submit or loop.run_in_executor worker started without a copy of the "
        "context, and a thread or task created before the `with replay(...)` block, do not carry it. Fix: propagate "
        "the context: ctx = contextvars.copy_context() inside the block, then threading.Thread(target=ctx.run, "
        "args=(fn, ...)), executor.submit(ctx.run, fn, ...) or loop.run_in_executor(None, ctx.run, fn, ...) "
        f"(asyncio.to_thread copies it for you); start the thread or task inside the block.{allow}"
    )


def declaration_changed(tool: str, recorded: str, declared: str) -> str:
    """The text of the warning when a tool's side effect changed since it was recorded."""
    return (
        f"{tool} was recorded with side_effect={recorded!r} but declares side_effect={declared!r} now; "
        f"the recorded declaration wins, so its miss does not run live in mode 'new_episodes'. If it really "
        f"only reads now, say so: replay(..., declare={{{tool!r}: {declared!r}}}), or re-record the tape (mode='all')"
    )


def unvouched(tool: str) -> str:
    """The text of a refusal of a tool that only a tape's text calls read-only, where it would run live."""
    return (
        f"{tool} would run live here, but only the tape's text says it is read-only (no live server listed it in "
        f"this process and no declaration says so), so it was refused and never ran: a tape may make a tool "
        f"stricter, never more permissive. If it really only reads, declare it: replay(..., "
        f"mcp_side_effects={{'SERVER/{tool}': 'read_only'}}), or let its live server be reached so its own "
        f"listing can say so"
    )
