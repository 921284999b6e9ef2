"""A recorded exception's attributes that its class no longer lets be set are said, not left off in silence."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from otel_agent_replay import ReplayWarning, agent_run, record, replay, tool


class QuotaError(Exception):
    def __init__(self, message: str, code: int = 0, retry_after: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


@tool(side_effect="read_only")
def fetch(q: str) -> str:
    raise QuotaError("over quota", code=429, retry_after=30)


def _agent() -> QuotaError:
    with pytest.raises(QuotaError) as raised:
        fetch("a")
    return raised.value


def test_attributes_a_changed_class_will_not_take_are_warned_and_counted(tape: Path) -> None:
    with record(tape), agent_run("a"):
        _agent()
    with replay(tape), agent_run("a"):
        again = _agent()
    assert (again.code, again.retry_after) == (429, 30)

    class QuotaError(Exception):  # the class as it is now: code became a read-only property
        retry_after = 0

        @property
        def code(self) -> int:
            return 0

    module = sys.modules[__name__]
    QuotaError.__module__, QuotaError.__qualname__ = __name__, "QuotaError"
    before = module.QuotaError
    module.QuotaError = QuotaError  # type: ignore[misc]
    try:
        with pytest.warns(ReplayWarning) as seen, replay(tape), agent_run("a"), pytest.raises(QuotaError) as raised:
            fetch("a")
    finally:
        module.QuotaError = before  # type: ignore[misc]
    (warned,) = [str(w.message) for w in seen if "recorded attribute" in str(w.message)]
    assert f"the recorded {__name__}.QuotaError is raised again without 1 of its recorded attribute(s)" in warned
    assert "code (AttributeError:" in warned
    assert (raised.value.code, raised.value.retry_after) == (0, 30)
