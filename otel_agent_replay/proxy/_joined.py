"""The child's end: a Python process started from a block joins it at its interpreter's start.

How the child learns it, with no change to the user's code (``_spawn`` puts it there):

- a process started by ``subprocess`` or ``os.posix_spawn``: the variable ``AGENT_REPLAY_JOIN`` holds its
  ticket (JSON), and ``PYTHONPATH`` starts with a folder of the block's whose ``sitecustomize`` calls
  ``join_from_environment`` (then runs the ``sitecustomize`` it hides, if there is one);
- a ``multiprocessing`` process started by ``spawn`` or ``forkserver`` (a ``Process``, a ``Pool``'s or a
  ``ProcessPoolExecutor``'s workers): the ticket travels inside the process object multiprocessing pickles
  for the child (``Ticket``), and unpickling it joins, before the process's target runs.

Joined, the process's decorated calls (its main thread, and what copies its context) go to the block
that started it through the channel named on the ticket (``JoinedBlock`` is this process's
``current_replay``): recorded there as steps of its run, or answered from its tape, stubbed or refused by
its replay, exactly as the parent's own calls. The ticket also carries the proxy's variables, so a
process started by ``multiprocessing`` (which inherits the parent's environment unchanged) sends its
HTTP through the block's proxy too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_agent_replay.capture import canonical_json, rebuild
from otel_agent_replay.core import AgentReplayError, RecordingWarning
from otel_agent_replay.instrumentation import ToolSpec, current_replay

from ._remote import JOIN_VARIABLE, connect, error_facts, rebuilt_error, receive, send, spec_facts, value_facts


@dataclass(frozen=True)
class Ticket:
    """What a child needs to join its block: the channel, its token, the context it was started from,
    whether the block records or replays (and which tape), and the proxy's variables."""

    channel: str
    token: str
    context: str
    mode: str
    """``record`` or ``replay``."""
    tape: str = ""
    environment: Mapping[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return orjson.dumps(
            {
                "channel": self.channel,
                "token": self.token,
                "context": self.context,
                "mode": self.mode,
                "tape": self.tape,
                "environment": dict(self.environment),
            }
        ).decode("utf-8")

    @classmethod
    def parse(cls, text: str) -> Ticket:
        data = orjson.loads(text)
        return cls(
            str(data["channel"]),
            str(data["token"]),
            str(data["context"]),
            str(data.get("mode") or "record"),
            str(data.get("tape") or ""),
            {str(k): str(v) for k, v in (data.get("environment") or {}).items()},
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # multiprocessing pickles the process object for a spawn or forkserver child: unpickling it there joins
        return (join_ticket, (self.text(),))


class JoinedBlock:
    """This process's ``current_replay`` once joined: each decorated call is served by the block that
    started the process (see ``_channel``)."""

    spans = False
    """The parent makes the step's spans; the child makes none."""

    def __init__(self, ticket: Ticket) -> None:
        self.ticket = ticket
        self.tape_path = ticket.tape or None
        self._command = " ".join(sys.argv)[:500]

    @property
    def pace(self) -> bool:
        return False

    # --- calls ---------------------------------------------------------------------------

    def _ask(self, spec: ToolSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Open the call at the parent: its first answer, and the connection (None when the parent is gone)."""
        bound = spec.binder(args, kwargs)
        message = {
            "op": "call",
            "token": self.ticket.token,
            "context": self.ticket.context,
            "spec": spec_facts(spec),
            "args": canonical_json(bound),
            "pid": os.getpid(),
            "command": self._command,
        }
        try:
            sock = connect(self.ticket.channel)
        except OSError as exc:
            if self.ticket.mode == "replay":
                raise AgentReplayError(
                    f"{spec.name}: this process joined the replay of {self.ticket.tape} that started it, and that "
                    f"replay has ended ({exc}); run the process inside the replay block, and wait for it there"
                ) from exc
            _warn_unrecorded(spec.name, str(exc))
            return None, None
        stream = sock.makefile("rwb")
        send(stream, message)
        return receive(stream), (sock, stream)

    def call(self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        try:
            reply, link = self._ask(spec, args, kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # the call itself raises the same TypeError
        if link is None:
            return fn(*args, **kwargs)
        with _closing(link):
            if "run" not in reply:
                return _served(spec, reply)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _report(link, {"raised": error_facts(exc)})
                raise
            _report(link, {"result": value_facts(result)})
            return result

    async def call_async(
        self, spec: ToolSpec, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        __tracebackhide__ = True
        try:
            reply, link = await asyncio.to_thread(self._ask, spec, args, kwargs)
        except TypeError:
            return await fn(*args, **kwargs)
        if link is None:
            return await fn(*args, **kwargs)
        with _closing(link):
            if "run" not in reply:
                return _served(spec, reply)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                await asyncio.to_thread(_report, link, {"raised": error_facts(exc)})
                raise
            await asyncio.to_thread(_report, link, {"result": value_facts(result)})
            return result

    def stream(
        self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Iterator[Any]:
        self._no_stream(spec)
        yield from fn(*args, **kwargs)

    async def stream_async(
        self, spec: ToolSpec, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]:
        self._no_stream(spec)
        async for chunk in fn(*args, **kwargs):
            yield chunk

    def _no_stream(self, spec: ToolSpec) -> None:
        why = "a generator tool called in a process started from the block is not joined yet"
        if self.ticket.mode == "replay":
            raise AgentReplayError(f"{spec.name}: {why}, so the replay refuses it; call it in the process of the block")
        _warn_unrecorded(spec.name, why)

    # --- runs ----------------------------------------------------------------------------

    def begin_run(
        self, agent_name: str, run_id: str, input_hash: str | None = None
    ) -> tuple[dict[str, Any], list[Any], object]:
        return {}, [], None  # the child's steps are the run's that started the process

    def end_run(self, output: object, span: Any) -> None:
        pass

    def outside_call(self, spec: Any) -> BaseException | None:
        return None


def _served(spec: ToolSpec, reply: Mapping[str, Any]) -> Any:
    __tracebackhide__ = True
    if "error" in reply:
        raise rebuilt_error(reply["error"])
    answer = reply.get("answer") or {}
    return rebuild(answer.get("value"), spec.result_hint(), answer.get("type"))


def _report(link: tuple[Any, Any], message: Mapping[str, Any]) -> None:
    """Send the child's outcome and wait for the parent to end the step (so calls stay in order)."""
    _sock, stream = link
    send(stream, message)
    with contextlib.suppress(ConnectionError):
        receive(stream)


@contextlib.contextmanager
def _closing(link: tuple[Any, Any]) -> Iterator[None]:
    sock, stream = link
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            stream.close()
        with contextlib.suppress(OSError):
            sock.close()


_warned: set[str] = set()


def _warn_unrecorded(name: str, why: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(f"{name} ran in process {os.getpid()} without being recorded: {why}", RecordingWarning, stacklevel=4)


_joined: list[JoinedBlock] = []


def join(ticket: Ticket) -> JoinedBlock:
    """Join this process to the block on ``ticket`` (its proxy's variables into this environment)."""
    for name, value in ticket.environment.items():
        os.environ[name] = value
    block = JoinedBlock(ticket)
    _joined.append(block)
    current_replay.set(block)
    return block


def joined_environment() -> dict[str, str]:
    """The variables the ticket of the block this process joined put in its environment (none: not joined)."""
    return dict(_joined[-1].ticket.environment) if _joined else {}


def join_ticket(text: str) -> Ticket:
    """What unpickling a ``Ticket`` calls in a multiprocessing child: join, and give the ticket back."""
    ticket = Ticket.parse(text)
    join(ticket)
    return ticket


def join_from_environment() -> JoinedBlock | None:
    """Join the block named by ``AGENT_REPLAY_JOIN`` (the startup hook calls it); None when there is none."""
    text = os.environ.get(JOIN_VARIABLE)
    if not text:
        return None
    try:
        return join(Ticket.parse(text))
    except (ValueError, KeyError) as exc:
        warnings.warn(
            f"{JOIN_VARIABLE} is not a ticket this version reads ({exc}); not joined", RecordingWarning, stacklevel=2
        )
        return None
