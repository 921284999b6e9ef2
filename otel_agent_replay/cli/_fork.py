"""``fork TAPE --agent module:function --at STEP [--result JSON | --raise TYPE] --then live -o FORK.jsonl``:
replay a recorded run with one step edited and say where the trajectory left the recording."""

from __future__ import annotations

import argparse
import builtins
import importlib
import os
import re
import shlex
import sys
from dataclasses import dataclass
from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape

from otel_agent_replay.core import AgentReplayError, ConfigurationError
from otel_agent_replay.regression import call_agent
from otel_agent_replay.replayer import Hints, replay
from otel_agent_replay.tape import load_tape

from ._output import dump_json

FORK_EPILOG = (
    "Importing the module named by --agent (and by --raise module:Class) is your explicit choice: it is your "
    "code; tape data never names a module or a function. exit status: 0 the forked run completed (forked or "
    "not), 1 it failed (a refused side effect, a divergence under --then raise, an error of the agent), "
    "2 a usage or tape error."
)


def _import(target: str, option: str) -> Any:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{option} {target}: give module:name (such as myagent.main:run)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's project, as `python -m` would see it
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"{option} {target}: cannot import {module_name!r} ({exc}); run from your project's folder or put it on "
            "PYTHONPATH"
        ) from exc
    try:
        for part in attr.split("."):
            found = getattr(found, part)
    except AttributeError:
        raise ConfigurationError(f"{option} {target}: {module_name} has no attribute {attr!r}") from None
    return found


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
"""The names in a hint's ``stub=('send_report',)``: read as text, never evaluated."""


@dataclass(frozen=True)
class ForkHints(Hints):
    """Hints in this command's words: ``fork`` again with the flag that fixes it (``--stub``), and the Python
    API's parameter named as such where the command has no flag for it (``fallbacks=``)."""

    words: tuple[str, ...]
    """This command's arguments, to print it again with one more flag."""

    def mode(self, mode: str) -> str:
        if mode == "all":
            return "record the run again (your agent inside record(TAPE))"
        return f"the Python replay(..., mode={mode!r}), which fork has no flag for"

    def option(self, text: str) -> str:
        name, _, value = text.partition("=")
        found = [a or b for a, b in _QUOTED.findall(value)] or [value]
        if name == "stub":
            return self._line(*(w for v in found for w in ("--stub", v)))
        if name == "then":
            return self._line("--then", found[0])
        return f"the Python replay(..., {text}), which fork has no flag for"

    def _line(self, *flags: str) -> str:
        words = list(self.words)
        if "--then" in flags and "--then" in words:  # one --then: the new one
            cut = words.index("--then")
            del words[cut : cut + 2]
        return shlex.join(["otel-agent-replay", "fork", *words, *flags])


def _words(args: argparse.Namespace) -> tuple[str, ...]:
    """The arguments ``fork`` was given, as a command line prints them."""
    words = [args.tape, "--agent", args.agent]
    for flag, value in (("--at", args.at), ("--result", args.result), ("--raise", args.raise_)):
        if value is not None:
            words += [flag, value]
    words += ["--then", args.then]
    for flag, value in (("-o", args.output), ("--run", args.run)):
        if value is not None:
            words += [flag, value]
    for tool in args.stub:
        words += ["--stub", tool]
    return tuple(words)


def _error(spec: str) -> BaseException:
    """``--raise TYPE[:MESSAGE]``: a built-in exception (``TimeoutError``) or ``module:Class``."""
    name, _, message = spec.partition("=")
    cls = _import(name, "--raise") if ":" in name else getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise ConfigurationError(
            f"--raise {spec}: {name!r} is not an exception class; give a built-in one (TimeoutError) or "
            "module:Class, and a message after '=' if you like (TimeoutError=too slow)"
        )
    return cls(message) if message else cls()


def _cmd_fork(args: argparse.Namespace, out: Console, err: Console) -> int:
    tape = load_tape(args.tape)
    edit: dict[str, Any] = {}
    if args.at is not None:
        if args.result is None and args.raise_ is None:
            raise ConfigurationError("--at needs what the step answers instead: --result JSON or --raise TYPE")
        if args.result is not None:
            try:
                edit[args.at] = orjson.loads(args.result)
            except orjson.JSONDecodeError as exc:
                raise ConfigurationError(f"--result {args.result!r} is not JSON ({exc})") from None
        else:
            edit[args.at] = _error(args.raise_)
    agent = _import(args.agent, "--agent")
    if not callable(agent):
        raise ConfigurationError(f"--agent {args.agent}: that is not a function")
    if args.run is not None:
        try:
            recorded_input = tape.run(args.run).input
        except KeyError as exc:
            raise ConfigurationError(f"--run {args.run}: {exc.args[0]}") from None
    else:
        recorded_input = tape.runs[0].input if tape.runs else None
    failure: BaseException | None = None
    session = None
    hints = ForkHints(_words(args))
    try:
        with replay(
            tape, then=args.then, edit=edit, fork_tape=args.output, run_id=args.run, stub=args.stub, hints=hints
        ) as session:
            call_agent(agent, recorded_input)  # as regress calls it: with the recorded run's input
    except AgentReplayError as exc:
        if session is None:
            raise
        failure = exc
    except Exception as exc:  # the agent's own error: part of what the counterfactual shows
        failure = exc
    assert session is not None
    fork = session.fork
    if args.json:
        dump_json(
            {
                "forked": fork is not None,
                "fork": None
                if fork is None
                else {
                    "run_id": fork.run_id,
                    "step_id": fork.step_id,
                    "tool": fork.tool,
                    "seq": fork.seq,
                    "cause": fork.cause,
                    "difference": fork.difference,
                },
                "fork_tape": str(session.fork_state.tape) if session.fork_state.tape else None,
                "stats": dict(session.stats),
                "error": None if failure is None else f"{type(failure).__name__}: {failure}",
            }
        )
        return 1 if failure is not None else 0
    if fork is None:
        out.print("did not fork: every call matched the recording")
    else:
        out.print(f"[yellow]{escape(str(fork))}[/yellow]")
    if session.fork_state.tape is not None:
        out.print(f"the forked run: {escape(str(session.fork_state.tape))}")
    stats = session.stats
    out.print(
        f"{stats.hits} from the tape, {stats.live_model_calls} model and {stats.live_tool_calls} tool call(s) live, "
        f"{stats.refused_side_effects} refused, {stats.fallback_calls} to fakes"
    )
    if failure is not None:
        err.print(f"[red]the run failed:[/red] {escape(type(failure).__name__)}: {escape(str(failure))}")
        return 1
    return 0


def register(sub: Any) -> None:
    """Add ``fork`` to the command's subparsers."""
    cmd = sub.add_parser(
        "fork",
        help="replay a recording with a step edited (or code changed) and go live where it leaves the recording",
        epilog=FORK_EPILOG,
    )
    cmd.add_argument("tape", help="the recording")
    cmd.add_argument(
        "--agent",
        required=True,
        metavar="MODULE:FUNCTION",
        help="your agent's entry point, called as regress calls it: with the recorded run's input (a JSON object "
        "as keyword arguments, anything else as one argument; a function of no arguments with none)",
    )
    cmd.add_argument("--at", metavar="STEP_ID", help="the recorded step to edit (such as search#2; `show` lists them)")
    answer = cmd.add_mutually_exclusive_group()
    answer.add_argument("--result", metavar="JSON", help="what the step answers instead (JSON)")
    answer.add_argument(
        "--raise", dest="raise_", metavar="TYPE[=MESSAGE]", help="an exception the step raises instead (TimeoutError)"
    )
    cmd.add_argument(
        "--then",
        choices=("live", "fallbacks", "raise"),
        default="live",
        help="at the first divergence: go live (default), to fakes, or fail",
    )
    cmd.add_argument("-o", "--output", metavar="FORK.jsonl", help="the forked run's tape (default: NAME.fork.jsonl)")
    cmd.add_argument("--run", metavar="RUN_ID", help="replay only this recorded run")
    cmd.add_argument(
        "--stub",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool that is not read-only answered with its recorded result, never run (repeatable)",
    )
    cmd.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    cmd.set_defaults(handler=_cmd_fork)
