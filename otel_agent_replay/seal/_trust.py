"""Trust stores loaded when first used: what a client builds for TLS, a replay does not pay for up front.

An HTTP client reads its certificate authorities when it is made, not when it connects: httpx and
httpcore load certifi's bundle or the system's (15–30 ms of CPU on this project's machines, for
~150 certificates parsed by OpenSSL), requests and urllib3 the same per connection pool, the openai,
anthropic and other SDKs once per client. An agent that builds its client inside a test pays it in
every replayed test, although a replay answers the client from the tape and a strict one opens no
connection at all: in ``bench/bench_suite.py`` it was 40% of a replayed test's CPU time.

While a replay is active, ``load_verify_locations`` (a CA file or directory that exists, no
``cadata``) and ``set_default_verify_paths`` (what ``load_default_certs`` and
``ssl.create_default_context()`` call) of a plain ``ssl.SSLContext``, called in the replay's context,
are noted instead of done, and the context becomes a ``DeferredTrustContext``: a subclass of
``ssl.SSLContext`` (``isinstance`` holds, every setting is the context's own) that does the noted
loads, in order, before anything reads or uses the store: wrapping a socket or a memory BIO (every
TLS connection: ``wrap_socket``, ``wrap_bio``, asyncio, anyio, http.client), ``get_ca_certs`` and
``cert_store_stats``. A context that does connect (a host in ``passthrough=``, ``then="live"``,
a client used after the replay) verifies exactly as it would have; it stays deferred after the
replay ends, since the loads are kept on the context itself.

What differs, said here and in docs/design.md ("Trust stores in a replay"): ``type(ctx)`` is the
subclass; a file that exists but is not a valid PEM bundle raises its ``SSLError`` at the first
connection instead of at the client's construction (a missing file still raises at once, since it
is checked first). Subclasses of ``ssl.SSLContext`` (truststore's, a user's) are left alone, and
code outside the replay's context (a background exporter's thread) loads as usual.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

from otel_agent_replay.instrumentation import current_replay

from ._counted import Counted

_Load = tuple[str, tuple[Any, ...], dict[str, Any]]
_BASE: Any = ssl.SSLContext.__mro__[1]  # ``_ssl._SSLContext``: the C methods that really load


class DeferredTrustContext(ssl.SSLContext):
    """An ``ssl.SSLContext`` whose trust store is loaded before its first use (made in a replay)."""

    _deferred_loads: list[_Load]
    _deferred_lock: threading.Lock

    def _load_trust(self) -> None:
        """Do the noted loads now, in order. Thread-safe: a thread that finds another loading waits for
        it (the list is emptied under the lock, one load at a time), so no thread connects half-loaded."""
        if not self._deferred_loads and not self._deferred_lock.locked():
            return
        with self._deferred_lock:
            while self._deferred_loads:
                name, args, kwargs = self._deferred_loads.pop(0)
                getattr(_BASE, name)(self, *args, **kwargs)

    def _wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
        self._load_trust()
        return super()._wrap_socket(*args, **kwargs)  # type: ignore[misc]

    def _wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
        self._load_trust()
        return super()._wrap_bio(*args, **kwargs)  # type: ignore[misc]

    def get_ca_certs(self, binary_form: bool = False) -> Any:
        self._load_trust()
        return super().get_ca_certs(binary_form)

    def cert_store_stats(self) -> dict[str, int]:
        self._load_trust()
        return super().cert_store_stats()

    def load_verify_locations(self, cafile: Any = None, capath: Any = None, cadata: Any = None) -> None:
        _load_verify_locations(self, cafile, capath, cadata)

    def set_default_verify_paths(self) -> None:
        _set_default_verify_paths(self)


def _deferrable(context: Any) -> bool:
    return type(context) in (ssl.SSLContext, DeferredTrustContext) and current_replay.get() is not None


def _note(context: ssl.SSLContext, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if type(context) is ssl.SSLContext:  # made a DeferredTrustContext in place: the caller keeps its object
        context.__class__ = DeferredTrustContext
        deferred: Any = context
        deferred._deferred_loads = []
        deferred._deferred_lock = threading.Lock()
    assert isinstance(context, DeferredTrustContext)
    context._deferred_loads.append((name, args, kwargs))


def _load_verify_locations(self: ssl.SSLContext, cafile: Any = None, capath: Any = None, cadata: Any = None) -> None:
    paths = [p for p in (cafile, capath) if p is not None]
    if _deferrable(self) and cadata is None and paths:
        for p in paths:
            os.stat(p)  # a missing file or directory fails now, as it would have (FileNotFoundError)
        _note(self, "load_verify_locations", (cafile, capath), {})
        return
    if isinstance(self, DeferredTrustContext):
        self._load_trust()
    _BASE.load_verify_locations(self, cafile, capath, cadata)


def _set_default_verify_paths(self: ssl.SSLContext) -> None:
    if _deferrable(self):
        _note(self, "set_default_verify_paths", (), {})
        return
    if isinstance(self, DeferredTrustContext):
        self._load_trust()
    _BASE.set_default_verify_paths(self)


_PATCHES = {
    "load_verify_locations": _load_verify_locations,
    "set_default_verify_paths": _set_default_verify_paths,
}


def _put() -> None:
    for name, function in _PATCHES.items():
        setattr(ssl.SSLContext, name, function)


def _take() -> None:
    for name in _PATCHES:
        if name in ssl.SSLContext.__dict__:
            delattr(ssl.SSLContext, name)  # inherited from the C class again


_deferring = Counted(_put, _take)


def install() -> None:
    """Defer trust-store loads made in a replay's context (counted: each ``install`` needs an ``uninstall``)."""
    _deferring.enter()


def uninstall() -> None:
    """Load as usual again once the last replay ends (contexts already deferred stay so)."""
    _deferring.exit()


def installed() -> bool:
    """Whether loads are deferred now (some replay is active)."""
    return _deferring.active()
