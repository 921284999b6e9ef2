"""The commands ``show`` and ``demo`` (the others: ``diff`` in ``_diff``, ``stats`` in ``_stats``, ``check`` in
``_check``; ``push``, ``pull`` in ``_backends``; ``ingest``, ``report``, ``golden`` in ``_store``; ``regress``
in ``_regression``; ``conform`` in ``_conform``). The command's entry point, ``main``, is in ``_entry``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.conversation import (
    Message,
    cut,
    part_text,
    said_messages,
    said_text,
    sent_messages,
)
from otel_agent_replay.core import TapeFormatError, visible
from otel_agent_replay.tape import Run, Step, Tape, lineage, load_tape

from ._cost import money, run_cost, step_cost
from ._output import dump_json

SHORT = 60


def _short(text: str | None, limit: int = SHORT) -> str:
    if text is None:
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms"


def step_json(step: Step) -> dict[str, Any]:
    """A step as plain JSON data for ``--json``."""
    cost = step_cost(step)
    return {
        "seq": step.seq,
        "step_id": step.step_id,
        "parent_step_id": step.parent_step_id,
        "kind": step.kind,
        "tool": step.tool,
        "side_effect": step.side_effect,
        "tool_version": step.tool_version,
        "call_key": step.call_key,
        "status": "error" if step.error else "ok",
        "error": None if step.error is None else {"type": step.error.type, "message": step.error.message},
        "duration_ms": round(step.duration_ns / 1e6, 3),
        "args": step.args,
        "result": step.result,
        "result_truncated": step.result_truncated,
        "model": step.model,
        "provider": step.provider,
        "input_tokens": step.input_tokens,
        "output_tokens": step.output_tokens,
        "cost_usd": None if cost is None else float(cost),
    }


def run_json(run: Run) -> dict[str, Any]:
    """A run and its steps as plain JSON data for ``--json`` (``forked_from``: a fork's lineage, else None)."""
    cost = run_cost(run.steps)
    forked = lineage(run)
    return {
        "run_id": run.run_id,
        "trace_id": run.trace_id,
        "agent_name": run.agent_name,
        "agent_version": run.agent_version,
        "complete": run.complete,
        "status": "error" if run.error else "ok",
        "input": run.input,
        "output": run.output,
        "duration_ms": round((run.end_ns - run.start_ns) / 1e6, 3) if run.complete else None,
        "input_tokens": sum(s.input_tokens or 0 for s in run.steps),
        "output_tokens": sum(s.output_tokens or 0 for s in run.steps),
        "cost_usd": None if cost is None else float(cost),
        "forked_from": None if forked is None else forked.to_json(),
        "steps": [step_json(s) for s in run.steps],
    }


def _tokens(step: Step) -> str:
    if step.input_tokens is None and step.output_tokens is None:
        return ""
    text = f"  {step.input_tokens or 0} in / {step.output_tokens or 0} out tokens"
    cost = step_cost(step)
    return text + (f"  ~{money(cost)}" if cost is not None else "")


def _step_label(step: Step, limit: int | None = SHORT) -> str:
    status = "[red]error[/red]" if step.error else "[green]ok[/green]"
    effect = step.side_effect or "undeclared"
    if step.kind == "llm":
        effect = "model"
        if step.model:
            effect += f" {step.model}"
    colour = "magenta" if step.kind == "llm" else {"read_only": "cyan"}.get(effect, "yellow")

    def cut(text: str | None) -> str:
        return text or "-" if limit is None else _short(text, limit)

    text = f"[bold]{step.seq}[/bold] {escape(step.step_id)}  [{colour}]{escape(effect)}[/{colour}]  {status}  "
    text += f"{_ms(step.duration_ns)}{_tokens(step)}"
    said = _model_said(step, limit) if step.kind == "llm" and not step.error else None
    if said is not None:
        return text + said
    text += f"\n    args {escape(cut(step.args_json))}"
    if step.error:
        text += f"\n    [red]{escape(step.error.type)}: {escape(cut(step.error.message))}[/red]"
    else:
        text += f"\n    result {escape(cut(step.result_json))}"
    return text


def _model_said(step: Step, limit: int | None) -> str | None:
    """A model step's lines: the last message it was sent, and what it said (text and tool calls);
    None when neither can be read (then the arguments and result are shown as they are)."""
    sent = sent_messages(step.tool, step.args, step.attributes)
    said = said_messages(step.tool, step.result, step.attributes)
    if not said:
        return None
    text = ""
    if sent:
        text += f"\n    asked [dim]{escape(sent[-1]['role'])}:[/dim] {escape(said_text(sent[-1:], limit))}"
    return text + f"\n    said {escape(said_text(said, limit))}"


def fork_line(run: Run) -> str:
    """A forked run's lineage as one markup line (``fork of TAPE, run …, at step …, edit …``), else ""."""
    forked = lineage(run)
    return "" if forked is None else f"[cyan]{escape(visible(str(forked), newlines=False))}[/cyan]"


def _signature(message: Message) -> tuple[str, str]:
    return (str(message.get("role")), said_text([message], None))


def render_conversation(run: Run, console: Console, *, full: bool = False) -> None:
    """A run turn by turn, as a chat: what each model call was sent that had not been said yet, what it
    answered (text and tool calls), and the tool steps that ran in between."""
    limit = None if full else 200
    console.print(
        f"[bold]run {escape(run.run_id)}[/bold]  agent {escape(visible(run.agent_name or '?'))}"
        + (f"  input {escape(_short(run.input_json, 100))}" if run.input_json else "")
    )
    if forked := fork_line(run):
        console.print(f"  {forked}")
    history: list[tuple[str, str]] = []
    for step in run.steps:
        if step.kind != "llm":
            outcome = f"{step.error.type}: {step.error.message}" if step.error else (step.result_json or "")
            console.print(
                f"  [dim]⚙ {escape(visible(step.tool))}({escape(cut(step.args_json or '', limit))})"
                f" → {escape(cut(visible(outcome), limit))}[/dim]"
            )
            continue
        sent = sent_messages(step.tool, step.args, step.attributes)
        said = said_messages(step.tool, step.result, step.attributes)
        signatures = [_signature(m) for m in sent]
        start = len(history) if signatures[: len(history)] == history else 0
        for message in sent[start:]:
            _print_message(console, message, limit)
        console.print(f"  [dim]── {escape(visible(step.step_id))} {escape(visible(step.model or step.tool))}[/dim]")
        if step.error:
            console.print(f"  [red]{escape(visible(step.error.type))}: {escape(visible(step.error.message))}[/red]")
        for message in said:
            _print_message(console, message, limit)
        if not sent and not said and not step.error:  # a model call whose arguments and result carry no messages
            console.print(f"  [dim]  args {escape(cut(step.args_json or '', limit))}[/dim]")
            console.print(f"  [magenta]result:[/magenta] {escape(cut(step.result_json or '', limit))}")
        history = signatures + [_signature(m) for m in said]
    if run.output_json is not None:
        console.print(f"  [bold]output[/bold] {escape(cut(run.output_json, limit))}")


_ROLE_COLOURS = {"system": "blue", "user": "green", "assistant": "magenta", "tool": "cyan"}


def _print_message(console: Console, message: Message, limit: int | None) -> None:
    role = str(message.get("role"))
    colour = _ROLE_COLOURS.get(role, "white")
    parts = [part_text(p, limit) for p in message.get("parts") or () if isinstance(p, dict)]
    first, *rest = parts or ["(empty)"]
    console.print(f"  [{colour}]{escape(role)}:[/{colour}] {escape(first)}")
    for line in rest:
        console.print(f"  {' ' * len(role)}  {escape(line)}")


def render_run(run: Run, *, full: bool = False) -> Tree:
    """A run as a tree: each step under the step that caused it (parent_step_id).

    Model steps are siblings under the run (their parent is only an enclosing step), so a ReAct
    loop reads turn by turn: model step, then the tool calls it asked for. Tapes recorded before
    that rule, where each model step was the parent of the next, are drawn flat the same way.
    """
    state = "" if run.complete else "  [red](incomplete: the run span never reached the tape)[/red]"
    tokens_in = sum(s.input_tokens or 0 for s in run.steps)
    tokens_out = sum(s.output_tokens or 0 for s in run.steps)
    usage = f"  {tokens_in} in / {tokens_out} out tokens" if tokens_in or tokens_out else ""
    cost = run_cost(run.steps)
    if cost is not None:
        usage += f"  ~{money(cost)} (estimated)"
    head = (
        f"[bold]run {escape(run.run_id)}[/bold]  agent {escape(run.agent_name or '?')}"
        f"{' v' + escape(run.agent_version) if run.agent_version else ''}  "
        f"{len(run.steps)} steps{usage}{state}"
    )
    if forked := fork_line(run):
        head += f"\n{forked}"
    root = Tree(head)
    nodes: dict[str, Tree] = {}
    kinds = {s.step_id: s.kind for s in run.steps}
    limit = None if full else SHORT
    for step in run.steps:
        parent_id = step.parent_step_id
        if step.kind == "llm" and kinds.get(parent_id) == "llm":
            parent_id = ""  # an older tape's staircase: a model step is not caused by the previous one
        parent = nodes.get(parent_id, root)
        nodes[step.step_id] = parent.add(_step_label(step, limit))
    if run.output_json is not None:
        root.add(f"output {escape(run.output_json if full else _short(run.output_json, 100))}")
    return root


def show_tape(tape: Tape, console: Console, *, full: bool = False, runs: tuple[Run, ...] | None = None) -> None:
    """Print every run of a tape (or the ones given) as a tree of steps."""
    shown = tape.runs if runs is None else runs
    if not shown:
        console.print(f"{escape(tape.path)}: no runs" + (" match" if runs is not None and tape.runs else ""))
    for run in shown:
        console.print(render_run(run, full=full))
    for warning in tape.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")


def _selected(tape: Tape, args: argparse.Namespace) -> tuple[Run, ...]:
    runs = tape.runs
    if args.run:
        runs = tuple(r for r in runs if r.run_id.startswith(args.run))
    if args.agent:
        runs = tuple(r for r in runs if r.agent_name == args.agent)
    return runs


def _show_step(runs: tuple[Run, ...], step_id: str, out: Console) -> int:
    found = [(run, s) for run in runs for s in run.steps if s.step_id == step_id or str(s.seq) == step_id]
    if not found:
        known = sorted({s.step_id for run in runs for s in run.steps})
        raise TapeFormatError(f"no step {step_id!r} in the runs shown (steps: {', '.join(known) or 'none'})")
    for run, step in found:
        out.print(f"[bold]run {escape(run.run_id)}[/bold]  agent {escape(run.agent_name or '?')}")
        if forked := fork_line(run):
            out.print(forked)
        out.print(_step_label(step, None).split("\n", 1)[0])
        out.print(f"  parent {escape(step.parent_step_id or '(the run)')}  call key {escape(step.call_key)}")
        out.print("  args")
        out.print(escape(_pretty(step.args)))
        if step.error:
            out.print(f"  [red]{escape(step.error.type)}[/red]: {escape(step.error.message)}")
        else:
            out.print("  result" + (" (shortened at capture)" if step.result_truncated else ""))
            out.print(escape(_pretty(step.result)))
    return 0


def _pretty(value: Any) -> str:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode("utf-8")
    return "\n".join("    " + line for line in text.splitlines())


def _cmd_show(args: argparse.Namespace, out: Console, err: Console) -> int:
    tape = load_tape(args.tape, redactor=DEFAULT_REDACTOR)  # a tape another tool wrote may hold secrets
    runs = _selected(tape, args)
    if args.step:
        if args.json:
            steps = [step_json(s) for run in runs for s in run.steps if args.step in (s.step_id, str(s.seq))]
            dump_json(steps)
            return 0 if steps else 1
        return _show_step(runs, args.step, out)
    if args.json:
        dump_json([run_json(r) for r in runs])
    elif args.conversation:
        for run in runs:
            render_conversation(run, out, full=args.full)
    else:
        show_tape(tape, out, full=args.full, runs=runs)
    return 0


def _cmd_demo(args: argparse.Namespace, out: Console, err: Console) -> int:
    from . import _demo
    from ._demo import run_demo

    os.environ.setdefault("OTEL_SERVICE_NAME", "otel-agent-replay-demo")
    passes = run_demo(args.out)
    tape = Path(args.out) / "tapes" / "demo.jsonl"
    out.print(f"[bold]1. record[/bold]: one run of the report-writer agent → {escape(str(tape))}")
    show_tape(load_tape(tape), out)
    for number, demo_pass in enumerate(passes[1:], start=2):
        out.print(f"\n[bold]{number}. {escape(demo_pass.name)}[/bold]: {escape(demo_pass.summary)}")
        shown = {k: v for k, v in demo_pass.stats.items() if v or k in _ALWAYS_SHOWN}
        out.print("   stats " + ", ".join(f"{k}={v}" for k, v in shown.items()))
        if demo_pass.error:
            out.print(f"   [yellow]{escape(demo_pass.error.splitlines()[0])}[/yellow]")
            for line in demo_pass.error.splitlines()[1:]:
                out.print(f"   {escape(line)}")
    report = Path(args.out) / "report.md"
    source = Path(_demo.__file__)
    out.print(f"\nthe demo agent is {escape(_relative(source))} (run_chain and its four tools)")
    out.print(
        f"its report file {escape(str(report))} was written by the recording, then deleted: no replay wrote it "
        "again (write_report is a side effect, so a replay serves its recorded result instead)"
    )
    out.print(f"view the recording again with: {escape(command_name())} show {escape(str(tape))}")
    return 0


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def command_name() -> str:
    """How to run this command again, as it can be typed here: ``otel-agent-replay`` when that is on
    PATH and is this installation, else the path of this installation's script (``.venv/bin/…``)."""
    script = Path(sys.executable).with_name("otel-agent-replay")
    on_path = shutil.which("otel-agent-replay")
    if on_path is not None and (not script.exists() or Path(on_path).resolve() == script.resolve()):
        return "otel-agent-replay"
    if script.exists():
        return _relative(script)
    return f"{sys.executable} -m otel_agent_replay.cli"


_ALWAYS_SHOWN = frozenset({"mode", "live_tool_calls", "real_side_effects", "drift_events"})


def register(sub: Any) -> None:
    """Add ``show`` and ``demo`` to the command's subparsers."""
    show = sub.add_parser("show", help="print each run of a tape as a tree of steps")
    show.add_argument("tape", help="a tape: OTLP JSON Lines, OTLP JSON or Jaeger JSON")
    show.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    show.add_argument("--run", metavar="RUN_ID", help="only the run with this run_id (or its first characters)")
    show.add_argument("--agent", metavar="NAME", help="only the runs of this agent")
    show.add_argument("--step", metavar="STEP_ID", help="one step in full: its arguments and result (or its seq)")
    show.add_argument("--full", action="store_true", help="do not shorten arguments, results and output")
    show.add_argument(
        "--conversation",
        action="store_true",
        help="each run turn by turn, as a chat (what was sent, what the model said)",
    )
    show.set_defaults(handler=_cmd_show)
    demo = sub.add_parser(
        "demo", help="record a four-step demo agent, then replay it: as recorded, with drift, a miss, an override"
    )
    demo.add_argument("--out", default="demo-out", help="folder for the tape and the report (default: demo-out)")
    demo.set_defaults(handler=_cmd_demo)
