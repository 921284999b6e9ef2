"""``ChildProxy``: the proxy of one block, from its start to the removal of its folder.

Made in the context of a ``record()`` or ``replay()`` block (and, for the command line, of its
run): every request that reaches it is decided in a copy of that context. Its folder (a private
temporary directory) holds mitmproxy's CA with its key and the bundles the child trusts; ``close``
stops the proxy and removes the folder, so the key never outlives the command.
"""

from __future__ import annotations

import contextvars
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from ._decider import ProcessFacts
from ._environment import (
    BUNDLE_VARIABLES,
    NODE_CA_VARIABLE,
    child_environment,
    pointed,
    upstreams,
    write_upstream_trust,
)
from ._server import ProxyServer


class ChildProxy:
    """A recording proxy for the processes this block starts: ``with ChildProxy(env) as proxy:``, then
    ``proxy.environment`` for the child."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        command: str = "",
        context: contextvars.Context | None = None,
    ) -> None:
        self.base_environment = dict(os.environ if env is None else env)
        self._context = context
        """The context each request is decided in a copy of (default: this one's, at ``start``)."""
        self._reverse: dict[str, int] = {}
        self.process = ProcessFacts(command)
        self.folder: Path | None = None
        self._server: ProxyServer | None = None
        self.environment: dict[str, str] = {}
        """The child's environment: ``base_environment`` pointed at the proxy (after ``start``)."""

    @property
    def port(self) -> int:
        """The regular proxy's loopback port."""
        return 0 if self._server is None else self._server.port

    def started(self, pid: int) -> None:
        """The command's process is running: its id goes on every later step."""
        self.process.pid = pid

    def start(self) -> ChildProxy:
        folder = Path(tempfile.mkdtemp(prefix="agent-replay-proxy-"))  # 0700: the CA's key stays ours
        self.folder = folder
        try:
            wanted = upstreams(self.base_environment)
            server = ProxyServer(
                folder,
                upstreams=[u.origin for u in wanted],
                upstream_ca=write_upstream_trust(folder, self.base_environment),
                context=self._context if self._context is not None else contextvars.copy_context(),
                process=self.process,
            )
            self._server = server
            server.start()
            self._reverse = {u.origin: server.reverse_port(u.origin) for u in wanted}
            self.environment = child_environment(
                self.base_environment,
                port=server.port,
                reverse=self._reverse,
                ca_cert=server.ca_cert,
                folder=folder,
            )
        except BaseException:
            self.close()
            raise
        return self

    def environment_for(self, env: Mapping[str, str], child: tuple[str, ProcessFacts] | None = None) -> dict[str, str]:
        """Another child's environment ``env`` pointed at this running proxy (the bundles made at ``start``);
        ``child``: its name and facts, put on the steps of its requests that carry the proxy's credentials."""
        trust = {k: self.environment[k] for k in (*BUNDLE_VARIABLES, NODE_CA_VARIABLE) if k in self.environment}
        credentials = ""
        if child is not None and self._server is not None:
            credentials = self._server.child(*child)
        return pointed(env, port=self.port, reverse=self._reverse, trust=trust, credentials=credentials)

    def close(self) -> None:
        """Stop the proxy and remove its folder (the CA's key with it)."""
        server, self._server = self._server, None
        try:
            if server is not None:
                server.close()
        finally:
            folder, self.folder = self.folder, None
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> ChildProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
