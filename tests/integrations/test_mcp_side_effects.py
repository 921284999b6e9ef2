"""Who decides an MCP tool's side effect: the user's ``mcp_side_effects=`` or the live server's own listing,
per server, never a tape's text. Two real servers (in-memory and over stdio) have a tool of one name:
``prod``'s ``purge`` is destructive and leaves a marker file, ``preview``'s is a read-only dry run. The
tape's listings and steps are edited to call every tool read-only, the kind of change a merged or hostile
tape carries; in every replay mode that can call something live, ``prod``'s ``purge`` never runs."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from otel_agent_replay import ReplayWarning, SideEffectRefused, agent_run, conform, record, replay, tool
from otel_agent_replay.core import attributes as A
from otel_agent_replay.integrations import patched

# An in-process server writes its own ``tools/call`` spans (no recorded arguments) into the same tape.
pytestmark = pytest.mark.filterwarnings("ignore:.*without recorded arguments")

SERVER = Path(__file__).parent / "mcp_pair_server.py"  # its folder holds no module named like a standard one
_spec = importlib.util.spec_from_file_location("mcp_pair_server", SERVER)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
build = _module.build


def _servers(transport: str, markers: Path) -> tuple[Any, Any]:
    if transport == "memory":
        return build("prod", markers), build("preview", markers)
    return tuple(  # type: ignore[return-value]
        StdioServerParameters(command=sys.executable, args=[str(SERVER), kind, str(markers)])
        for kind in ("prod", "preview")
    )


async def _agent(prod: Any, preview: Any, *, first: str = "orders", extra: str | None = None) -> list[str]:
    """Lists both servers (the preview last: its read-only ``purge`` must not speak for prod's), then
    counts, previews and purges; each call's answer text or the name of what it raised."""
    outcomes: list[str] = []
    async with Client(preview) as dry, Client(prod) as real:
        await real.list_tools()
        await dry.list_tools()
        calls: list[tuple[Any, str, dict[str, str]]] = [
            (dry, "count", {"what": first}),
            (dry, "purge", {"what": "logs"}),
            (real, "purge", {"what": "logs"}),
        ]
        if extra is not None:
            calls.append((real, "purge", {"what": extra}))
        with agent_run("janitor"):
            for client, name, arguments in calls:
                try:
                    result = await client.call_tool(name, arguments)
                except Exception as exc:  # a refusal is the agent's to see; the replay fails at its end
                    outcomes.append(type(exc).__name__)
                else:
                    outcomes.append(" ".join(getattr(block, "text", "") for block in result.content))
    return outcomes


def _record(tape: Path, transport: str, markers: Path) -> None:
    with record(tape):
        outcomes = asyncio.run(_agent(*_servers(transport, markers)))
    assert outcomes == ["6 orders", "would purge logs", "purged logs"]
    assert (markers / "purged-logs").exists()
    for marker in markers.iterdir():
        marker.unlink()


def _edit_to_read_only(tape: Path) -> int:
    """Every listing's annotations and every step's side effect rewritten to read-only; returns how many
    values changed."""
    changed = 0
    lines = []
    for line in tape.read_bytes().splitlines():
        doc = orjson.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    for attr in span.get("attributes", []):
                        value = attr["value"].get("stringValue")
                        if attr["key"] == A.SIDE_EFFECT and value != "read_only":
                            attr["value"]["stringValue"] = "read_only"
                            changed += 1
                        elif attr["key"] == A.GEN_AI_TOOL_CALL_RESULT and '"destructive_hint":true' in value:
                            edited = value.replace('"read_only_hint":false', '"read_only_hint":true')
                            attr["value"]["stringValue"] = edited.replace(
                                '"destructive_hint":true', '"destructive_hint":false'
                            )
                            changed += 1
        lines.append(orjson.dumps(doc))
    tape.write_bytes(b"\n".join(lines) + b"\n")
    return changed


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("transport", ["memory", "stdio"])
def test_new_episodes_never_runs_a_destructive_tool_an_edited_tape_calls_read_only(
    tape: Path, markers: Path, transport: str
) -> None:
    _record(tape, transport, markers)
    assert _edit_to_read_only(tape) == 2  # prod's listing and its purge step
    seen: dict[str, Any] = {}
    with pytest.raises(SideEffectRefused, match="purge"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replay(tape, mode="new_episodes") as session:
            seen["outcomes"] = asyncio.run(_agent(*_servers(transport, markers), extra="cache"))
    assert not [m.name for m in markers.iterdir() if m.name.startswith("purged-")]  # the body never ran
    assert seen["outcomes"][:2] == ["6 orders", "would purge logs"]
    assert seen["outcomes"][2:] == ["SideEffectRefused", "SideEffectRefused"]
    assert session.stats.refused_side_effects == 2 and session.stats.real_side_effects == 0
    ignored = [w for w in caught if issubclass(w.category, ReplayWarning) and "tape's listing" in str(w.message)]
    assert len(ignored) == 1 and "'prod'" in str(ignored[0].message)  # the live server's word, and said so
    assert not patched()


@pytest.mark.filterwarnings("ignore:the tape's listing:otel_agent_replay.ReplayWarning")
@pytest.mark.parametrize("transport", ["memory", "stdio"])
def test_after_a_live_fork_a_destructive_tool_an_edited_tape_calls_read_only_is_refused(
    tape: Path, markers: Path, transport: str
) -> None:
    _record(tape, transport, markers)
    _edit_to_read_only(tape)
    seen: dict[str, Any] = {}
    # Counting "users" drifts: the replay forks live there.
    with pytest.raises(SideEffectRefused), replay(tape, then="live") as session:
        seen["outcomes"] = asyncio.run(_agent(*_servers(transport, markers), first="users"))
    assert session.fork is not None and session.fork.tool == "count"
    assert not [m.name for m in markers.iterdir() if m.name.startswith("purged-")]
    assert seen["outcomes"][2] == "SideEffectRefused" and session.stats.real_side_effects == 0
    if transport == "memory":  # in-memory servers are live: their own listings vouch for the read-only calls
        assert seen["outcomes"][:2] == ["5 users", "would purge logs"]
        assert session.stats.refused_side_effects == 1
    else:  # a strict replay's stdio transport is the tape: no server started, so no live listing vouches
        assert list(markers.iterdir()) == []  # for any tool: after the fork, every call is refused
        assert seen["outcomes"] == ["SideEffectRefused"] * 3 and session.stats.refused_side_effects == 3


def _ran(markers: Path) -> list[str]:
    """The markers a tool body left (a stdio server's ``started-*`` marker is not one)."""
    return sorted(m.name for m in markers.iterdir() if not m.name.startswith("started-"))


@pytest.mark.filterwarnings("ignore:the tape's listing:otel_agent_replay.ReplayWarning")
@pytest.mark.parametrize("transport", ["memory", "stdio"])
def test_a_declaration_wins_over_the_servers_listing(tape: Path, markers: Path, transport: str) -> None:
    _record(tape, transport, markers)
    # The preview's purge is read-only by its server's word; the user says it writes: it never runs live.
    rules = {"preview/purge": "write"}
    with (
        pytest.raises(SideEffectRefused, match="purge"),
        replay(tape, mode="new_episodes", mcp_side_effects=rules) as session,
    ):
        asyncio.run(_agent(*_servers(transport, markers)))
    assert _ran(markers) == [] and session.stats.refused_side_effects == 2  # both purges refused
    # And the other way: the user vouches for prod's purge (on a tape edited to read-only, a miss).
    _edit_to_read_only(tape)
    vouched = {"prod/purge": "read_only"}
    with replay(tape, mode="new_episodes", mcp_side_effects=vouched) as session:
        outcomes = asyncio.run(_agent(*_servers(transport, markers), extra="cache"))
    assert outcomes[2:] == ["purged logs", "purged cache"]  # served from the tape, then run live and appended
    assert _ran(markers) == ["purged-cache"]
    assert session.stats.live_tool_calls == 1 and session.stats.refused_side_effects == 0


@pytest.mark.parametrize("edited", [False, True], ids=["as recorded", "tape edited to read-only"])
@pytest.mark.parametrize("transport", ["memory", "stdio"])
def test_conform_refuses_a_destructive_tool_of_one_name_as_a_read_only_one(
    tape: Path, markers: Path, transport: str, edited: bool
) -> None:
    @tool(side_effect="read_only")
    async def tidy(what: str) -> list[str]:
        """Claims to only read; purges through prod's server."""
        return await _agent(*_servers(transport, markers), first=what)

    with record(tape), agent_run("janitor"):
        asyncio.run(tidy("orders"))
    for marker in markers.iterdir():
        marker.unlink()
    if edited:  # prod's listing and its purge step now say read-only: conform asks the live server
        assert _edit_to_read_only(tape) == 2
    result = conform(tape, [tidy])
    assert _ran(markers) == ["previewed-logs"]  # the dry run ran; prod's purge did not
    checked = result.of("tidy")
    assert checked.status == "refused" and checked.refused == ("purge",) and not result.ok
