"""The recording proxy: any process, in any language, on the same tape and under the same seal.

A child process's HTTP and HTTPS go through mitmproxy on loopback (its ``mitmdump``, in an environment of its own); each
request is decided by ``integrations``' own exchange in the context of the block that started the
proxy, so it is recorded, answered from the tape or refused exactly as an in-process request is.
``ChildProxy`` runs one; ``otel-agent-replay record|replay TAPE -- CMD`` (``cli``) uses it.
"""

from __future__ import annotations

from ._decider import ProcessFacts, refusal
from ._environment import BASE_URLS, BaseUrl, Upstream, child_environment, upstreams
from ._proxied import ChildProxy
from ._server import MISSING_MITMDUMP, MITMDUMP_VARIABLE, ProxyServer, mitmdump

__all__ = [
    "BASE_URLS",
    "MISSING_MITMDUMP",
    "MITMDUMP_VARIABLE",
    "BaseUrl",
    "ChildProxy",
    "ProcessFacts",
    "ProxyServer",
    "Upstream",
    "child_environment",
    "mitmdump",
    "refusal",
    "upstreams",
]
