"""The parent's end of a joined child: a loopback channel that serves the child's decorated calls.

A Python process started from a ``record()`` or ``replay()`` block joins it (``_joined``): each of its
decorated calls comes here, one connection per call, and is served in a copy of the context the
process was started from (its run, its enclosing step, the block's recording or replay), by the same
code an in-process call goes through. So the step is the parent's: its sequence number, its place in
the run, the parent's tape writer and ledger; nothing in the child writes the tape.

One call, as JSON lines (``_remote``): the child sends ``call`` with the token of the block, the
context it was given, what its code declared and the bound arguments. The parent answers ``answer``
(a value from the tape, a stub, an override), ``error`` (a refusal, a miss, a drift, a recorded
failure), or ``run``: the call runs in the child (a recording, a read-only call a replay lets go
live), which sends back ``result`` or ``raised``; the parent ends the step with it and says ``done``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hmac
import itertools
import logging
import secrets
import socketserver
import threading
from collections.abc import Mapping
from typing import Any

import orjson

from otel_agent_replay.capture import capture_result
from otel_agent_replay.core import attributes as A
from otel_agent_replay.instrumentation import ToolSpec, current_replay, prepare, start_step, step_run

from ._remote import error_facts, rebuilt_error, receive, remote_spec, send, value_facts

_log = logging.getLogger(__name__)


class ChildChannel:
    """A loopback server whose clients are the block's joined children (``start``, ``close``)."""

    def __init__(self) -> None:
        self.token = secrets.token_urlsafe(24)
        self._contexts: dict[str, contextvars.Context] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._specs: dict[str, ToolSpec] = {}
        channel = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                channel._serve(self.rfile, self.wfile)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler, bind_and_activate=True)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="agent-replay-children", daemon=True
        )

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ChildChannel:
        # a thread of its own starts with an empty context: what it serves runs in the context it is given
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def context_id(self, context: contextvars.Context) -> str:
        """A name for the context a child is started from; its calls are served in copies of it."""
        with self._lock:
            name = str(next(self._ids))
            self._contexts[name] = context
        return name

    # --- one call ----------------------------------------------------------------------

    def _serve(self, rfile: Any, wfile: Any) -> None:
        try:
            message = receive(rfile)
        except (ConnectionError, orjson.JSONDecodeError):
            return
        if not hmac.compare_digest(str(message.get("token") or ""), self.token):
            send(wfile, {"error": error_facts(PermissionError("not a process of this block"))})
            return
        with self._lock:
            context = self._contexts.get(str(message.get("context")))
        if context is None or message.get("op") != "call":
            send(wfile, {"error": error_facts(LookupError("unknown context or operation"))})
            return
        try:
            context.copy().run(self._call, message, rfile, wfile)
        except (ConnectionError, OSError):
            _log.debug("a joined child went away during a call", exc_info=True)

    def _spec(self, message: Mapping[str, Any], names: tuple[str, ...]) -> ToolSpec:
        process = {A.PROCESS_PID: int(message.get("pid") or 0), A.PROCESS_COMMAND: str(message.get("command") or "")}
        key = orjson.dumps([message.get("spec"), names, process], option=orjson.OPT_SORT_KEYS).decode()
        with self._lock:
            found = self._specs.get(key)
        if found is not None:
            return found

        def attributes(_args: Any) -> Mapping[str, Any]:
            return process

        spec = remote_spec(message.get("spec") or {}, names, attributes)
        with self._lock:
            self._specs[key] = spec
        return spec

    def _call(self, message: Mapping[str, Any], rfile: Any, wfile: Any) -> None:
        kwargs = orjson.loads(str(message.get("args") or "{}"))
        if not isinstance(kwargs, dict):
            kwargs = {}
        spec = self._spec(message, tuple(kwargs))
        ran: dict[str, Any] = {}

        def remote(**_given: Any) -> Any:
            send(wfile, {"run": True})
            reply = receive(rfile)
            if "raised" in reply:
                ran["raised"] = True
                error = rebuilt_error(reply["raised"])
                raise error
            result = reply.get("result") or {}
            ran["type"] = result.get("type")
            return result.get("value")

        try:
            hook = current_replay.get()
            if hook is not None:
                value = hook.call(spec, remote, (), dict(kwargs))
            else:
                value = _recorded(spec, remote, kwargs, ran)
        except BaseException as exc:
            if ran:
                send(wfile, {"done": True})  # the child raises its own exception
            else:
                send(wfile, {"error": error_facts(exc)})
            if not isinstance(exc, Exception):
                raise
            return
        send(wfile, {"done": True} if ran else {"answer": value_facts(value)})


def _recorded(spec: ToolSpec, remote: Any, kwargs: dict[str, Any], ran: dict[str, Any]) -> Any:
    """Inside ``record()``: the child's call as a step of the run it was started in, its result's type
    description as the child saw it."""
    run = step_run()
    if run is None:
        return remote(**kwargs)
    step = start_step(spec, prepare(spec, run, (), dict(kwargs)))
    try:
        value = remote(**kwargs)
    except BaseException as exc:
        step.fail(exc)
        raise
    captured = capture_result(value, step.capture)
    if ran.get("type") is not None:
        captured = dataclasses.replace(captured, type_json=orjson.dumps(ran["type"]).decode("utf-8"))
    step.finish(value, captured)
    return value
