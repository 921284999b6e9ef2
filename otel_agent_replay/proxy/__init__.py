"""The recording proxy: any process, in any language, on the same tape and under the same seal.

A child process's HTTP and HTTPS go through mitmproxy on loopback (its ``mitmdump``, in an environment of its own); each
request is decided by ``integrations``' own exchange in the context of the block that started the
proxy, so it is recorded, answered from the tape or refused exactly as an in-process request is.
``ChildProxy`` runs one; ``otel-agent-replay record|replay TAPE -- CMD`` (``cli``) uses it.

Inside a Python ``record()`` or ``replay()`` block, every process started from the block's context is
given the block's proxy (``open_block``, ``_spawn``), and a Python one joins the block at its start
(``_joined``): its decorated calls are served by the block through a loopback channel (``_channel``).
"""

from __future__ import annotations

from ._block import BlockChildren, close_block, open_block
from ._decider import ProcessFacts, refusal
from ._environment import BASE_URLS, BaseUrl, Upstream, child_environment, upstreams
from ._joined import JoinedBlock, Ticket, join_from_environment, joined_environment
from ._proxied import ChildProxy
from ._remote import JOIN_VARIABLE
from ._server import MISSING_MITMDUMP, MITMDUMP_VARIABLE, ProxyServer, mitmdump
from ._spawn import Spawner, current_block, starting_server

__all__ = [
    "BASE_URLS",
    "JOIN_VARIABLE",
    "MISSING_MITMDUMP",
    "MITMDUMP_VARIABLE",
    "BaseUrl",
    "BlockChildren",
    "ChildProxy",
    "JoinedBlock",
    "ProcessFacts",
    "ProxyServer",
    "Spawner",
    "Ticket",
    "Upstream",
    "child_environment",
    "close_block",
    "current_block",
    "join_from_environment",
    "joined_environment",
    "mitmdump",
    "open_block",
    "refusal",
    "starting_server",
    "upstreams",
]
