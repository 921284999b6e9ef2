"""mitmproxy on loopback, in a process of its own: one regular proxy and one reverse listener per upstream.

The regular proxy (``HTTP_PROXY`` and friends) takes plain HTTP and ``CONNECT`` for HTTPS, which it
ends with a certificate signed by the run's CA (made by mitmproxy in the run's folder, its
``confdir``). Each reverse listener stands for one upstream a provider's base-URL variable named
(``OPENAI_BASE_URL``): a client that ignores proxy variables (Node 20's ``fetch``) is pointed at it,
and mitmproxy sends what it receives to that upstream, so the step is the upstream's as if the client
had called it. Connections upstream are lazy (made only when a request is forwarded) and no upstream
certificate is fetched ahead, so a replay opens none.

mitmproxy runs as ``mitmdump`` from an environment of its own: every mitmproxy release pins its
dependencies tightly (11.0, the last for Python 3.11, wants ``h11<=0.14``, which httpx 0.28 cannot
use), so it cannot share the agent's environment. ``AGENT_REPLAY_MITMDUMP`` names it, else ``mitmdump``
on ``PATH``; ``MISSING_MITMDUMP`` says how to install it.
"""

from __future__ import annotations

import contextvars
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from otel_agent_replay.core import ConfigurationError

from ._decider import Decider, ProcessFacts

MITMDUMP_VARIABLE = "AGENT_REPLAY_MITMDUMP"
MISSING_MITMDUMP = (
    "the recording proxy needs mitmproxy's mitmdump, in an environment of its own (mitmproxy pins its "
    "dependencies, so it does not share your agent's): pipx install mitmproxy, or python3 -m venv ~/.mitmproxy "
    "&& ~/.mitmproxy/bin/pip install mitmproxy; then put mitmdump on PATH or set "
    f"{MITMDUMP_VARIABLE}=~/.mitmproxy/bin/mitmdump, and run the command again"
)
_START_TIMEOUT = 60.0
_RELAY = Path(__file__).with_name("_mitm_addon.py")
"""The script mitmdump loads (mitmproxy's interpreter runs it: it is never imported here)."""


def mitmdump() -> str:
    """The ``mitmdump`` to run, or ``ConfigurationError`` saying how to install one."""
    named = os.environ.get(MITMDUMP_VARIABLE)
    if named:
        path = os.path.expanduser(named)
        if os.access(path, os.X_OK):
            return path
        raise ConfigurationError(f"{MITMDUMP_VARIABLE}={named}: not an executable file; {MISSING_MITMDUMP}")
    found = shutil.which("mitmdump")
    if found is None:
        raise ConfigurationError(MISSING_MITMDUMP)
    return found


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free just now."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


_CLEARED = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class ProxyServer:
    """mitmdump and its decider serving one block: ``start()``, then ``port`` and ``reverse_port(origin)``;
    ``close()``."""

    def __init__(
        self,
        folder: Path,
        *,
        upstreams: Sequence[str],
        upstream_ca: Path | None,
        context: contextvars.Context,
        process: ProcessFacts,
    ) -> None:
        self.folder = folder
        self.upstreams = tuple(dict.fromkeys(upstreams))
        """Origins (``https://api.openai.com``) with a reverse listener each."""
        self.upstream_ca = upstream_ca
        self.process = process
        self._decider = Decider(context, process, str(upstream_ca) if upstream_ca else None)
        self._mitmdump: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        """The regular proxy's loopback port."""
        return int(self._decider.ports.get("regular") or 0)

    @property
    def ca_cert(self) -> Path:
        """The run's CA certificate (PEM, no key): what the child trusts."""
        return self.folder / "mitmproxy-ca-cert.pem"

    def child(self, who: str, process: ProcessFacts) -> str:
        """Name a child to the decider (its steps get ``process``); the credentials its proxy variables carry."""
        self._decider.children[who] = process
        return f"{who}:{self._decider.token}"

    def reverse_port(self, origin: str) -> int:
        """The loopback port that stands for ``origin``."""
        reverse: Mapping[str, int] = self._decider.ports.get("reverse") or {}
        return int(reverse[origin])

    def _command(self, program: str) -> list[str]:
        # mitmproxy refuses two listeners it cannot tell apart (two https reverse modes on port 0), so each
        # gets a free port of its own; the relay reports the ports it really listens on
        ports = _free_ports(1 + len(self.upstreams))
        words = [program, "-q", "--listen-host", "127.0.0.1", "--mode", f"regular@{ports[0]}"]
        for origin, port in zip(self.upstreams, ports[1:], strict=True):
            words += ["--mode", f"reverse:{origin}@{port}"]
        settings = {"confdir": str(self.folder), "connection_strategy": "lazy", "upstream_cert": "false"}
        if self.upstream_ca is not None:
            settings["ssl_verify_upstream_trusted_ca"] = str(self.upstream_ca)
        for name, value in settings.items():
            words += ["--set", f"{name}={value}"]
        return [*words, "-s", str(_RELAY)]

    def start(self) -> None:
        program = mitmdump()
        self._decider.start()
        env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
        env["AGENT_REPLAY_PROXY_DECIDER"] = self._decider.address
        env["AGENT_REPLAY_PROXY_TOKEN"] = self._decider.token
        log = (self.folder / "mitmdump.log").open("wb")
        try:
            # started outside the block's context: the proxy is ours, not a process of the agent's
            self._mitmdump = contextvars.Context().run(
                subprocess.Popen, self._command(program), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        finally:
            log.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._decider.ready.wait(0.05):
            if self._mitmdump.poll() is not None or time.monotonic() > deadline:
                said = (self.folder / "mitmdump.log").read_text("utf-8", "replace")[-2000:]
                raise ConfigurationError(
                    f"the recording proxy ({program}) did not start: {said.strip() or 'no output'}"
                )

    def close(self) -> None:
        """Stop mitmdump (what is in flight is cut), then the decider.

        Killed, not asked to stop: it keeps nothing of its own to save (each step is this process's), and a
        graceful shutdown of its event loop takes seconds, at the end of every block that started a process."""
        child, self._mitmdump = self._mitmdump, None
        if child is not None and child.poll() is None:
            child.kill()
            child.wait(10)
        self._decider.close()
