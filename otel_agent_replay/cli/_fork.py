"""``fork TAPE --agent module:function --at STEP [--result JSON | --raise TYPE] --then live -o FORK.jsonl``:
replay a recorded run with one step edited and say where the trajectory left the recording.

``fork TAPE --at STEP ... -- CMD [ARGS]`` does the same for a tape a command recorded (``record TAPE --
CMD``): the command runs through the recording proxy (``_proxy``) inside the forked replay, as the run it
recorded (its agent name), so its requests are answered from the tape, edited at ``--at``, and go live
where they leave it (``--then live``), recorded on the fork tape like a Python agent's."""

from __future__ import annotations

import argparse
import builtins
import importlib
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.markup import escape

from otel_agent_replay.core import AgentReplayError, ConfigurationError
from otel_agent_replay.instrumentation import agent_run
from otel_agent_replay.proxy import ChildProxy
from otel_agent_replay.regression import call_agent
from otel_agent_replay.replayer import Hints, replay
from otel_agent_replay.tape import Run, load_tape

from ._output import dump_json
from ._proxy import run_command

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
    API's parameter named as such where the command has no flag for it (``fallbacks=``). For a command's tape
    the command comes last, after ``--``, and recording again is ``record`` of that command."""

    words: tuple[str, ...]
    """This command's arguments before ``--``, to print it again with one more flag."""
    command: tuple[str, ...] = ()
    """The command after ``--`` (none: a Python agent)."""
    agent: str | None = None
    """The recorded run's agent name, which ``record --agent`` gives a command's run again."""

    def mode(self, mode: str) -> str:
        if mode == "all":
            if not self.command:
                return "record the run again (your agent inside record(TAPE))"
            named = ("--agent", self.agent) if self.agent else ()
            return shlex.join(["otel-agent-replay", "record", *named, self.words[0], "--", *self.command])
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
        tail = ("--", *self.command) if self.command else ()
        return shlex.join(["otel-agent-replay", "fork", *words, *flags, *tail])


def _words(args: argparse.Namespace) -> tuple[str, ...]:
    """The arguments ``fork`` was given before any ``--``, as a command line prints them."""
    words = [args.tape, *(("--agent", args.agent) if args.agent else ())]
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


def _split(args: argparse.Namespace) -> list[str]:
    """The command after ``--`` (none: a Python agent); the options given after the tape parsed too."""
    words = list(args.cmd)
    cut = words.index("--") if "--" in words else len(words)
    if cut:
        args.options_parser.parse_args(words[:cut], namespace=args)
    command = words[cut + 1 :]
    forms = (
        "--agent MODULE:FUNCTION for a Python agent (fork TAPE --agent myagent.main:run --at STEP ...), or the "
        "command after `--` for a tape `record TAPE -- CMD` made (fork TAPE --at STEP ... -- node agent.mjs)"
    )
    if command and args.agent:
        raise ConfigurationError(f"fork {args.tape}: give one of {forms}, not both")
    if not command and not args.agent:
        raise ConfigurationError(f"fork {args.tape}: name what runs the recorded run: {forms}")
    if args.result is not None and args.raise_ is not None:
        raise ConfigurationError(f"fork {args.tape}: give --result JSON or --raise TYPE, not both")
    return command


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
    command = _split(args)
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
    agent = _import(args.agent, "--agent") if args.agent else None
    if agent is not None and not callable(agent):
        raise ConfigurationError(f"--agent {args.agent}: that is not a function")
    recorded: Run | None = tape.runs[0] if tape.runs else None
    if args.run is not None:
        try:
            recorded = tape.run(args.run)
        except KeyError as exc:
            raise ConfigurationError(f"--run {args.run}: {exc.args[0]}") from None
    recorded_input = recorded.input if recorded is not None else None
    failure: BaseException | None = None
    session = None
    status = 0
    hints = ForkHints(_words(args), tuple(command), recorded.agent_name if recorded is not None else None)
    try:
        with replay(
            tape, then=args.then, edit=edit, fork_tape=args.output, run_id=args.run, stub=args.stub, hints=hints
        ) as session:
            if agent is not None:
                call_agent(agent, recorded_input)  # as regress calls it: with the recorded run's input
            else:  # the command, through the proxy, as the run it recorded
                name = recorded.agent_name if recorded is not None else Path(command[0]).name
                with (
                    agent_run(name, task=shlex.join(command)) as run,
                    ChildProxy(os.environ, command=shlex.join(command)) as proxy,
                ):
                    status = run_command(run, command, proxy)
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
                "exit_status": status if command else None,
            }
        )
        return 1 if failure is not None else status
    if fork is None:
        out.print("did not fork: " + ("the run failed first" if failure else "every call matched the recording"))
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
    if command:
        out.print(f"(the command exited {status})")
    return status


def register(sub: Any) -> None:
    """Add ``fork`` to the command's subparsers."""
    cmd = sub.add_parser(
        "fork",
        help="replay a recording with a step edited (or code changed) and go live where it leaves the recording",
        epilog=FORK_EPILOG,
    )
    _options(cmd)
    cmd.add_argument("tape", help="the recording")
    cmd.add_argument(
        "cmd",
        nargs=argparse.REMAINDER,
        metavar="-- CMD [ARGS]",
        help="for a tape `record TAPE -- CMD` made: the command, run through the recording proxy (no --agent)",
    )
    late = argparse.ArgumentParser(prog="otel-agent-replay fork", add_help=False)
    _options(late)
    cmd.set_defaults(handler=_cmd_fork, options_parser=late)


def _options(cmd: Any) -> None:
    cmd.add_argument(
        "--agent",
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
