"""Who decides an MCP tool's side effect: the user's ``mcp_side_effects=`` or the annotations its own server
listed live in this process, keyed by server and tool; a listing served from a tape can only narrow.

A server is one client connection (the ``ClientSession`` object): what one connection's server listed is
never read for another, so two servers with a tool of one name (a destructive ``delete`` and a dry-run
``delete``) never borrow each other's annotations. The user names a server by the name its handshake
gave (``serverInfo.name``, what ``MCPServer("crm")`` or ``FastMCP("crm")`` says), the same for stdio,
HTTP and in-memory servers and in record and replay: ``mcp_side_effects={"crm/delete_customer": "write"}``
(``fnmatch`` patterns over ``server/tool``, the first that matches wins).

Per call, in order: the user's declaration; else, for a connection whose live server can be reached in
a replay that can call something live (``mode="new_episodes"``, ``then=``, ``edit=``, ``conform``'s gate),
the live server's own listing (asked for once per connection when the tape answered the agent's
``list_tools``); else the tape's listing; else ``external``. A tape's listing that says read-only where the
user or the live server says otherwise is ignored, with a ``ReplayWarning``; one that is stricter than
the live listing is kept (the tape may narrow). A strict replay runs nothing live, so there the tape's
listing only decides whether a recorded answer is served or refused.
"""

from __future__ import annotations

import contextlib
import fnmatch
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_agent_replay.core import (
    DECLARABLE_SIDE_EFFECTS,
    ConfigurationError,
    RecordMode,
    ReplayWarning,
    SideEffect,
    SideEffectName,
)

_READ_ONLY = SideEffect.READ_ONLY
UNKNOWN_SERVER = "?"
"""The server name of a connection whose handshake gave none (matched by ``*/tool`` patterns)."""


def mcp_side_effect_rules(
    rules: Mapping[str, SideEffect | SideEffectName] | None,
) -> tuple[tuple[str, SideEffect], ...]:
    """``mcp_side_effects=`` checked: ``"server/tool"`` pattern → a declarable side effect."""
    out: list[tuple[str, SideEffect]] = []
    for pattern, effect in (rules or {}).items():
        if not isinstance(pattern, str) or "/" not in pattern or effect not in DECLARABLE_SIDE_EFFECTS:
            spellings = ", ".join(repr(e.value) for e in DECLARABLE_SIDE_EFFECTS)
            raise ConfigurationError(
                f"mcp_side_effects={{{pattern!r}: {effect!r}}}: give 'server/tool' keys (the server's name from its "
                f"handshake, fnmatch patterns such as 'crm/delete_*' or '*/send_email') mapped to one of {spellings}"
            )
        out.append((pattern, SideEffect(effect)))
    return tuple(out)


def side_effect_of(tool: object) -> SideEffect:
    """A listed MCP tool's side effect, from its annotations."""
    annotations = getattr(tool, "annotations", None)
    if annotations is not None and _hint(annotations, "read_only_hint", "readOnlyHint"):
        return SideEffect.READ_ONLY
    if annotations is not None and _hint(annotations, "destructive_hint", "destructiveHint"):
        return SideEffect.WRITE
    return SideEffect.EXTERNAL


def _hint(annotations: object, snake: str, camel: str) -> bool:
    value = getattr(annotations, snake, None)
    if value is None:
        value = getattr(annotations, camel, None)
    return value is True


def _listing(result: object) -> dict[str, SideEffect]:
    found: dict[str, SideEffect] = {}
    for tool in getattr(result, "tools", None) or ():
        name = getattr(tool, "name", None)
        if isinstance(name, str):
            found[name] = side_effect_of(tool)
    return found


@dataclass
class _Connection:
    """What is known of one client connection's server."""

    name: str | None = None
    live: dict[str, SideEffect] | None = None
    """What the server itself listed in this process (None: never asked)."""
    taped: dict[str, SideEffect] = field(default_factory=dict)
    """What listings served from a tape said."""
    warned: set[str] = field(default_factory=set)


_lock = threading.Lock()
_connections: weakref.WeakKeyDictionary[Any, _Connection] = weakref.WeakKeyDictionary()
_tape_streams: weakref.WeakSet[Any] = weakref.WeakSet()
"""The streams of transports the tape stands in for (a strict replay's): no live server behind them."""


def _connection(session: Any) -> _Connection:
    with _lock:
        found = _connections.get(session)
        if found is None:
            found = _connections[session] = _Connection()
        return found


def forget() -> None:
    """Forget every connection (the last block ended)."""
    with _lock:
        _connections.clear()


def note_tape_streams(*streams: Any) -> None:
    """Mark the streams a tape transport hands a client: a connection over them reaches no server."""
    for stream in streams:
        with contextlib.suppress(TypeError):  # a stream that cannot be weakly referenced
            _tape_streams.add(stream)


def _on_tape(session: Any) -> bool:
    dispatcher = getattr(session, "_dispatcher", None)  # 2.x keeps its streams in a dispatcher
    stream = getattr(dispatcher, "_read_stream", None) or getattr(session, "_read_stream", None)
    return stream is not None and stream in _tape_streams


def note_server(session: Any, result: object) -> None:
    """The handshake's answer (1.x ``initialize``): the server's name."""
    info = getattr(result, "server_info", None) or getattr(result, "serverInfo", None)
    name = getattr(info, "name", None)
    if isinstance(name, str):
        _connection(session).name = name


def server_name(session: Any) -> str:
    """The name the connection's server gave in its handshake (2.x ``server_info``; 1.x from ``initialize``)."""
    try:
        info = getattr(session, "server_info", None)
    except Exception:  # a property that needs the handshake first
        info = None
    name = getattr(info, "name", None)
    if isinstance(name, str) and name:
        return name
    return _connection(session).name or UNKNOWN_SERVER


def learn(session: Any, result: object, *, live: bool) -> None:
    """A listing this connection received: from its live server, or from a tape."""
    found = _listing(result)
    connection = _connection(session)
    with _lock:
        if live:
            connection.live = {**(connection.live or {}), **found}
        else:
            connection.taped.update(found)


Rules = tuple[tuple[str, SideEffect], ...]
_rules: Callable[[], Rules] = tuple
"""The ``mcp_side_effects=`` rules of the newest active block (set by ``_activation``)."""


def rules_from(provider: Callable[[], Rules]) -> None:
    """Where the rules in force are read (``_activation`` knows the active blocks)."""
    global _rules
    _rules = provider


def declared(server: str, tool: str) -> SideEffect | None:
    """The user's declaration for ``server/tool``, or None."""
    key = f"{server}/{tool}"
    for pattern, effect in _rules():
        if fnmatch.fnmatchcase(key, pattern):
            return effect
    return None


def can_call_live(replay: Any) -> bool:
    """Whether a replay can call something live: ``new_episodes``, a fork (``then=``, ``edit=``), or a hook
    without replay options (``conform``'s gate runs read-only tools live)."""
    options = getattr(replay, "options", None)
    if options is None:
        return True
    return bool(options.record_mode == RecordMode.NEW_EPISODES or options.forks)


async def side_effect(
    session: Any,
    tool: str,
    replay: Any,
    list_live: Callable[[], Awaitable[Any]],
) -> tuple[SideEffect, bool]:
    """The side effect of ``tool`` on this connection (see the module's order), and whether code or the live
    world vouches for it (False: a tape's listing alone says it; such a tool never runs live). ``list_live``
    asks the live server for its listing (at most once per connection, only where something may run live)."""
    server = server_name(session)
    connection = _connection(session)
    taped = connection.taped.get(tool)
    user = declared(server, tool)
    if user is not None:
        _ignored(connection, server, tool, taped, user, "mcp_side_effects=")
        return user, True
    if replay is None:  # recording, or no replay: what the live server listed
        return (connection.live or {}).get(tool, SideEffect.EXTERNAL), True
    if connection.live is None and can_call_live(replay) and not _on_tape(session):
        try:
            learn(session, await list_live(), live=True)
        except Exception:  # no live listing to be had: nothing live vouches for the tool
            with _lock:
                connection.live = connection.live or {}
    live = connection.live.get(tool) if connection.live is not None else None
    if live is not None:
        _ignored(connection, server, tool, taped, live, "the live server's listing")
        return (taped if live == _READ_ONLY and taped is not None else live), True  # the tape may narrow
    if taped is None:
        return SideEffect.EXTERNAL, True
    return taped, taped != _READ_ONLY


def _ignored(
    connection: _Connection, server: str, tool: str, taped: SideEffect | None, authority: SideEffect, who: str
) -> None:
    if taped != _READ_ONLY or authority == _READ_ONLY or tool in connection.warned:
        return
    connection.warned.add(tool)
    warnings.warn(
        f"the tape's listing of MCP server {server!r} calls {tool} read-only, but {who} says {authority.value}: "
        f"the tape's word is ignored (a tape may make a tool stricter, never more permissive); re-record the "
        f"tape if the server changed",
        ReplayWarning,
        stacklevel=4,
    )
