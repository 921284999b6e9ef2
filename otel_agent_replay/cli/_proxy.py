"""``record TAPE -- CMD [ARGS]`` and ``replay TAPE -- CMD [ARGS]``: any process, in any language, through
the recording proxy (``otel_agent_replay.proxy``).

The command runs with its HTTP and HTTPS sent through mitmproxy on loopback, inside a ``record()`` or
``replay()`` block and one run (``--agent``, default the command's name), so each request is a step of
that run exactly as an in-process request is. Exit status: the command's own when the recording or the
replay is clean; 1 with the divergence printed (a drift, a miss, a refused side effect, an unused step)
when the replay is not, even if the command exited 0; 2 for a usage or tape error.
"""

from __future__ import annotations

import argparse
import contextvars
import os
import re
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.core import AgentReplayError, ConfigurationError, visible
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import RunHandle, agent_run
from otel_agent_replay.proxy import ChildProxy
from otel_agent_replay.recorder import record
from otel_agent_replay.replayer import Hints, replay

RECORD_HELP = "run a command (any language) with its HTTP and HTTPS recorded to a tape through a local proxy"
REPLAY_HELP = "run a command (any language) sealed: its HTTP and HTTPS answered from the tape, or refused"

_EPILOG = (
    "Put the command after `--`. Its HTTP and HTTPS go through a proxy on 127.0.0.1 (HTTP_PROXY, HTTPS_PROXY, "
    "ALL_PROXY, a cleared NO_PROXY), provider base URLs (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, "
    "GOOGLE_GEMINI_BASE_URL, OLLAMA_HOST) point at it, and a CA made for this run is trusted by the command "
    "alone (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS); the CA's key is removed "
    "when the command ends. Needs the [proxy] extra (mitmproxy)."
)


_FLAGS = {"stub": "--stub", "passthrough": "--passthrough"}
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
"""The names in a hint's ``stub=('POST host/path',)``: read as text, never evaluated."""


@dataclass(frozen=True)
class CommandHints(Hints):
    """Hints in this command's words: the command line to run again, with the flag that fixes it."""

    tape: str
    words: tuple[str, ...]

    def _line(self, verb: str, *flags: str) -> str:
        return shlex.join(["otel-agent-replay", verb, *flags, self.tape, "--", *self.words])

    def mode(self, mode: str) -> str:
        return self._line("record") if mode == "all" else self._line("replay", "--mode", mode)

    def option(self, text: str) -> str:
        name, _, value = text.partition("=")
        flag = _FLAGS.get(name)
        if flag is None:
            return f"replay(..., {text}) in a Python replay() block"
        found = [a or b for a, b in _QUOTED.findall(value)] or [value]
        return self._line("replay", *(word for v in found for word in (flag, v)))


def _command(args: argparse.Namespace) -> list[str]:
    words = list(args.cmd)
    if "--" in words:  # options given after the tape (argparse's remainder takes everything after it)
        cut = words.index("--")
        if cut:
            args.options_parser.parse_args(words[:cut], namespace=args)
        words = words[cut + 1 :]
    if not words:
        raise ConfigurationError(f"{args.command} {args.tape}: give the command to run after `--` (-- node agent.mjs)")
    return words


def _agent_name(args: argparse.Namespace, words: list[str]) -> str:
    return str(args.agent or Path(words[0]).name)


def _run(words: list[str], proxy: ChildProxy) -> int:
    """Start the command (outside the block's context: it is the agent, not a child of one of its tools),
    tell the proxy its pid, wait for it; Ctrl-C goes to it, and its status is ours."""
    try:
        child = contextvars.Context().run(subprocess.Popen, words, env=proxy.environment)
    except OSError as exc:
        raise ConfigurationError(f"cannot run {shlex.join(words)!r}: {exc}") from exc
    proxy.started(child.pid)
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
    return status if status >= 0 else 128 - status


def run_command(run: RunHandle, words: list[str], proxy: ChildProxy) -> int:
    """The command run through the proxy as the run's process: its command and pid on the run span."""
    run.span.set_attribute(A.PROCESS_COMMAND, proxy.process.command)
    status = _run(words, proxy)
    if proxy.process.pid is not None:
        run.span.set_attribute(A.PROCESS_PID, proxy.process.pid)
    return status


def _cmd_record(args: argparse.Namespace, out: Console, err: Console) -> int:
    words = _command(args)
    name = _agent_name(args, words)
    with (
        record(args.tape, agent=name),
        agent_run(name, task=shlex.join(words)) as run,
        ChildProxy(os.environ, command=shlex.join(words)) as proxy,
    ):
        status = run_command(run, words, proxy)
    err.print(f"recorded {escape(name)} to {escape(str(args.tape))} (the command exited {status})")
    return status


def _cmd_replay(args: argparse.Namespace, out: Console, err: Console) -> int:
    words = _command(args)
    name = _agent_name(args, words)
    options: dict[str, Any] = {
        "mode": args.mode,
        "then": args.then,
        "hints": CommandHints(str(args.tape), tuple(words)),
    }
    if args.stub:
        options["stub"] = args.stub
    if args.passthrough:
        options["passthrough"] = args.passthrough
    if args.allow_unused:
        options["allow_unused"] = True
    if args.pace != "none":
        options["pace"] = args.pace
    status = 0
    session = None
    try:
        with (
            replay(args.tape, **options) as session,
            agent_run(name, task=shlex.join(words)) as run,
            ChildProxy(os.environ, command=shlex.join(words)) as proxy,
        ):
            status = run_command(run, words, proxy)
    except AgentReplayError as exc:
        if session is None:
            raise  # the tape could not be read, or an option is wrong: a usage error (2)
        err.print(f"[red]the replay diverged:[/red] {escape(visible(str(exc)))}")
        for divergence in session.report:
            if str(divergence.message) not in str(exc):
                err.print(f"  {escape(divergence.kind.value)}: {escape(visible(divergence.message))}")
        err.print(f"(the command exited {status})")
        return 1
    stats = session.stats
    err.print(
        f"replayed {escape(name)} from {escape(str(args.tape))}: {stats.hits} answered from the tape, "
        f"{stats['passthrough_requests']} passed through (the command exited {status})"
    )
    return status


def _common(cmd: Any) -> None:
    cmd.add_argument("tape", help="the tape (OTLP JSON Lines)")
    cmd.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS]", help="the command to run")


def register(sub: Any) -> None:
    """Add ``record`` and ``replay`` to the command's subparsers."""
    rec = sub.add_parser("record", help=RECORD_HELP, epilog=_EPILOG)
    _agent(rec)
    _common(rec)
    late = argparse.ArgumentParser(prog="otel-agent-replay record", add_help=False)
    _agent(late)
    rec.set_defaults(handler=_cmd_record, options_parser=late)
    rep = sub.add_parser("replay", help=REPLAY_HELP, epilog=_EPILOG)
    _replay_options(rep)
    _common(rep)
    late = argparse.ArgumentParser(prog="otel-agent-replay replay", add_help=False)
    _replay_options(late)
    rep.set_defaults(handler=_cmd_replay, options_parser=late)


def _agent(cmd: Any) -> None:
    cmd.add_argument("--agent", metavar="NAME", help="the run's agent name (default: the command's name)")


def _replay_options(rep: Any) -> None:
    _agent(rep)
    rep.add_argument(
        "--stub",
        action="append",
        default=[],
        metavar="TOOL",
        help="a step that is not read-only (POST host/path) answered with its recorded result (repeatable)",
    )
    rep.add_argument(
        "--passthrough",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a host whose HTTP goes live, never recorded (repeatable)",
    )
    rep.add_argument(
        "--mode",
        choices=("none", "once", "new_episodes", "all"),
        default="none",
        help="none: strict (default); new_episodes: read-only misses go live and are appended",
    )
    rep.add_argument(
        "--then", choices=("raise", "live"), default="raise", help="at the first divergence: fail (default), go live"
    )
    rep.add_argument("--allow-unused", action="store_true", help="recorded steps may go unused")
    rep.add_argument(
        "--pace",
        choices=("none", "recorded"),
        default="none",
        help="recorded: a stream's chunks reach the command at their recorded offsets (default: at once)",
    )
