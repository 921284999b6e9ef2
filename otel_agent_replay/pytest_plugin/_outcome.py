"""What a test's failure is: the divergence first, whatever the agent's SDK or framework wrapped it in,
and a refusal or divergence the test expects (``@pytest.mark.agent_tape(expect=...)``)."""

from __future__ import annotations

from typing import Any

import pytest

from otel_agent_replay.core import ConfigurationError, ReplayDivergence


def divergence_in(error: BaseException | None) -> ReplayDivergence | None:
    """The replay divergence inside ``error``: itself, its cause or context chain, or a member of an
    exception group at any depth (anyio task groups nest them); None when there is none."""
    seen: set[int] = set()
    pending: list[BaseException] = [error] if error is not None else []
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ReplayDivergence):
            return current
        members = getattr(current, "exceptions", None)
        if isinstance(members, (list, tuple)):
            pending.extend(m for m in members if isinstance(m, BaseException))
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return None


def expected_errors(item: pytest.Item) -> tuple[type[BaseException], ...]:
    """The marker's ``expect=``: an exception class or a tuple of them (none by default)."""
    marker = item.get_closest_marker("agent_tape")
    expect: Any = marker.kwargs.get("expect") if marker is not None else None
    if expect is None:
        return ()
    classes = expect if isinstance(expect, tuple) else (expect,)
    if not all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
        raise ConfigurationError(
            f"{item.nodeid}: @pytest.mark.agent_tape(expect={expect!r}): give an exception class, such as "
            "SideEffectRefused or TapeDrift (or a tuple of them)"
        )
    return classes


def expectation_met(expected: tuple[type[BaseException], ...], error: BaseException | None) -> bool:
    """Whether the test met what it expected: the replay raised (or the body let out) one of ``expected``."""
    if not expected or error is None:
        return False
    found = divergence_in(error)
    return isinstance(error, expected) or (found is not None and isinstance(found, expected))


def unmet(item: pytest.Item, expected: tuple[type[BaseException], ...]) -> AssertionError:
    """The failure of a test that expected a refusal or divergence the replay never raised."""
    names = " or ".join(c.__name__ for c in expected)
    return AssertionError(
        f"{item.nodeid}: the test expects the replay to raise {names} (agent_tape(expect=...)), and it raised "
        "none: the agent no longer makes the call the test is about, or the tape was recorded differently"
    )
