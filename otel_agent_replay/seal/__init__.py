"""The seal: what keeps a strict replay from reaching anything the tape does not answer.

Below HTTP, where the integrations answer from the tape: the network guard (every connect, send and
name lookup of a replay checked against what it lets through), the process watch (each process started
from a replay counted), and trust stores loaded at first use instead of at a client's start. Each is put
in place while any replay needs it (``Counted``) and decides by the replay of the calling context."""

from __future__ import annotations

from ._children import ChildWatch
from ._children import install as install_child_watch
from ._children import uninstall as uninstall_child_watch
from ._counted import Counted
from ._hosts import NetworkGuard, running_live
from ._network import install as install_network_guard
from ._network import uninstall as uninstall_network_guard
from ._trust import DeferredTrustContext
from ._trust import install as install_trust_deferral
from ._trust import uninstall as uninstall_trust_deferral

__all__ = [
    "ChildWatch",
    "Counted",
    "DeferredTrustContext",
    "NetworkGuard",
    "install_child_watch",
    "install_network_guard",
    "install_trust_deferral",
    "running_live",
    "uninstall_child_watch",
    "uninstall_network_guard",
    "uninstall_trust_deferral",
]
