"""The children of one ``record()`` or ``replay()`` block: what a process started from it is given.

Made as the block starts (``open_block``), nothing running until the first process is started from the
block's context (``_spawn`` asks), so a block that starts none costs nothing:

- the proxy (``ChildProxy``: mitmproxy on loopback, see ``_server``), one per run that starts processes,
  deciding each request in a copy of that run's context (the run, not the step that happened to start the
  first process): the children's HTTP and HTTPS are steps of the run that started them, recorded,
  answered from the tape or refused like the parent's. Without mitmdump there is none, and
  ``proxy_missing`` says how to install it;
- the channel (``ChildChannel``) a joined Python child sends its decorated calls to, and a ticket per
  process naming the context it was started from (its run and enclosing step);
- a folder with the startup hook (a ``sitecustomize``) that ``PYTHONPATH`` puts first for an exec-style
  child. ``close`` stops both and removes the folder (the proxy's CA key with its own folder).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Mapping
from contextvars import Token
from pathlib import Path

from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_agent_replay.core import ConfigurationError, RecordingWarning
from otel_agent_replay.instrumentation import current_run, current_step

from ._channel import ChildChannel
from ._decider import ProcessFacts
from ._joined import Ticket
from ._proxied import ChildProxy
from ._remote import JOIN_VARIABLE
from ._server import mitmdump
from ._spawn import Spawner, current_block, install

_STARTUP = '''"""otel-agent-replay: join the block that started this process, then run the sitecustomize it hides.

The join waits for the process to import otel-agent-replay (a process that never does has no decorated
tool to join with), so a child that is no agent pays nothing at its start; it joins as soon as the
package itself is imported, before any of its modules, so no import is caught half done."""
import importlib.machinery, importlib.util, os, sys


class _JoinOnImport:
    def find_spec(self, name, path=None, target=None):
        if name != "otel_agent_replay":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None:
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            try:
                from otel_agent_replay.proxy import join_from_environment

                join_from_environment()
            except Exception:  # another version, or a broken install: the process runs, not joined
                pass

        loader.exec_module = exec_module
        return spec


if os.environ.get("AGENT_REPLAY_JOIN"):
    sys.meta_path.insert(0, _JoinOnImport())
_here = os.path.dirname(os.path.abspath(__file__))
_path = [p for p in sys.path if p and os.path.abspath(p) != _here]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _path)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
'''


class BlockChildren:
    """What the processes started from one block get (see the module's docstring)."""

    def __init__(self, mode: str, tape: str) -> None:
        self.mode = mode
        self.tape = tape
        self.pid = os.getpid()
        self.proxy_missing: str | None = None
        """Why there is no proxy (mitmdump not found: how to install it), once a process was started."""
        self._lock = threading.Lock()
        self._proxies: dict[int, tuple[object, ChildProxy]] = {}
        self._channel: ChildChannel | None = None
        self._startup: Path | None = None
        self._facts: dict[str, ProcessFacts] = {}
        self.closed = False

    # --- what a child gets -----------------------------------------------------------------

    def environment(self, env: Mapping[str, str] | None, command: str = "") -> dict[str, str]:
        """The environment of a process started with ``env`` (None: this process's) from the block's context;
        ``command`` goes on the steps of its requests."""
        base = dict(os.environ if env is None else env)
        if self.closed or os.getpid() != self.pid:
            return base
        ticket = self._ticket(contextvars.copy_context())
        proxy = self.proxy()
        out = proxy.environment_for(base, self._child(ticket, command)) if proxy is not None else base
        out[JOIN_VARIABLE] = ticket.text()
        startup = self._startup_folder()
        rest = base.get("PYTHONPATH")
        out["PYTHONPATH"] = str(startup) + (os.pathsep + rest if rest else "")
        return out

    def ticket(self, context: contextvars.Context, command: str = "") -> Ticket:
        """The ticket of a ``multiprocessing`` process started from ``context``, with the proxy's variables
        (such a process inherits this environment unchanged)."""
        ticket = self._ticket(context)
        proxy = self.proxy()
        if proxy is None:
            return ticket
        pointed = proxy.environment_for(os.environ, self._child(ticket, command))
        environment = {k: v for k, v in pointed.items() if os.environ.get(k) != v}
        return dataclasses.replace(ticket, environment=environment)

    def started(self, ticket: str, pid: int) -> None:
        """The process of ``ticket`` (its text, or its context id) runs as ``pid``: on its requests' steps."""
        context = ticket if ticket.isdigit() else Ticket.parse(ticket).context
        facts = self._facts.get(context)
        if facts is not None:
            facts.pid = pid

    def _ticket(self, context: contextvars.Context) -> Ticket:
        with self._lock:
            if self._channel is None:  # made outside the block's context, as the proxy is (``proxy``)
                self._channel = contextvars.Context().run(ChildChannel().start)
            channel = self._channel
        return Ticket(channel.address, channel.token, channel.context_id(context), self.mode, self.tape)

    def _child(self, ticket: Ticket, command: str) -> tuple[str, ProcessFacts]:
        facts = ProcessFacts(command[:500])
        self._facts[ticket.context] = facts
        return f"child-{ticket.context}", facts

    def proxy(self) -> ChildProxy | None:
        """The proxy of the run of this context (started now if it is the run's first process), or None."""
        run = current_run.get()
        with self._lock:  # held while one starts: a second process of the run waits for it
            found = self._proxies.get(id(run))
            if found is not None and found[0] is run:
                return found[1]
            if self.proxy_missing is not None or self.closed:
                return None
            try:
                mitmdump()
            except ConfigurationError as exc:
                self.proxy_missing = str(exc)
                return None
            proxy = ChildProxy(os.environ, context=_run_context(run))
            try:
                # started outside the block's context (it decides in the run's, given above): its own loopback
                # servers and lookups are not the agent's traffic, which a replay with allow_hosts=[] refuses
                contextvars.Context().run(proxy.start)
            except ConfigurationError as exc:  # mitmdump would not start: the child runs, its HTTP unsealed
                self.proxy_missing = str(exc)
                warnings.warn(
                    f"the proxy for the processes started from the block of {self.tape} could not start, so their "
                    f"HTTP is neither recorded nor sealed: {exc}",
                    RecordingWarning,
                    stacklevel=2,
                )
                return None
            self._proxies[id(run)] = (run, proxy)
            return proxy

    def _startup_folder(self) -> Path:
        with self._lock:
            if self._startup is None:
                folder = Path(tempfile.mkdtemp(prefix="agent-replay-join-"))
                (folder / "sitecustomize.py").write_text(_STARTUP, "utf-8")
                self._startup = folder
            return self._startup

    # --- the end ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the proxies and the channel; remove the startup folder."""
        with self._lock:
            self.closed = True
            proxies = [proxy for _, proxy in self._proxies.values()]
            self._proxies.clear()
            channel, self._channel = self._channel, None
            startup, self._startup = self._startup, None
        for proxy in proxies:
            proxy.close()
        if channel is not None:
            channel.close()
        if startup is not None:
            shutil.rmtree(startup, ignore_errors=True)


def _run_context(run: object) -> contextvars.Context:
    """A copy of this context as the run's own: no enclosing step, the run's span as the current span."""
    context = contextvars.copy_context()
    context.run(current_step.set, None)
    span = getattr(run, "span", None)
    if span is not None:
        context.run(otel_context.attach, trace.set_span_in_context(span))
    return context


def open_block(mode: str, tape: str) -> tuple[BlockChildren, Token[Spawner | None]]:
    """Make the block's children state current (``close_block`` ends it); installs the spawn hooks once."""
    install()
    block = BlockChildren(mode, tape)
    return block, current_block.set(block)


def close_block(entered: tuple[BlockChildren, Token[Spawner | None]]) -> None:
    block, token = entered
    with contextlib.suppress(ValueError):  # ended in another context than it started in: leave that one alone
        current_block.reset(token)
    block.close()
