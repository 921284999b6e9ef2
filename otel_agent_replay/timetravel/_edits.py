"""``edit=``: recorded steps whose results are replaced, for a counterfactual replay."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.tape import Step, Tape

_BODY_FORMS = ("body", "text", "base64", "sha256", "layout", "newline", "events", "framing")


class Edits:
    """Step id (``search#2``) → the value it answers with, or the exception it raises."""

    def __init__(self, edits: Mapping[str, Any]) -> None:
        for key in edits:
            if not isinstance(key, str) or "#" not in key:
                raise ConfigurationError(
                    f"edit={{{key!r}: ...}}: name a recorded step by its step id, such as 'search#2' (the tool and "
                    "its call number; `otel-agent-replay show TAPE` lists them)"
                )
        self.by_step: Mapping[str, Any] = MappingProxyType(dict(edits))

    def __bool__(self) -> bool:
        return bool(self.by_step)

    def check(self, tape: Tape) -> None:
        """Every edited step is on the tape, or ``ConfigurationError`` naming the steps it has."""
        known = {step.step_id for run in tape.runs for step in run.steps}
        unknown = sorted(set(self.by_step) - known)
        if unknown:
            shown = ", ".join(sorted(known)[:30]) + (" …" if len(known) > 30 else "")
            raise ConfigurationError(
                f"edit= names {unknown}, which {tape.path} does not have: its steps are {shown or 'none'}"
            )

    def get(self, step: Step) -> tuple[bool, Any]:
        """``(True, value)`` when ``step`` is edited."""
        if step.step_id in self.by_step:
            return True, edited_result(step, self.by_step[step.step_id])
        return False, None


def edited_result(step: Step, value: Any) -> Any:
    """What an edited step answers: the value itself, or for an HTTP step (whose result is a response) the
    value as the response's JSON body, status and headers kept; an exception stays an exception."""
    if isinstance(value, BaseException) or (isinstance(value, type) and issubclass(value, BaseException)):
        return value
    recorded = step.result
    if isinstance(recorded, dict) and isinstance(recorded.get("status"), int):
        if isinstance(value, dict) and isinstance(value.get("status"), int):
            return value  # a whole response
        headers = dict(recorded.get("headers") or {})
        headers["content-type"] = "application/json"
        kept = {k: v for k, v in recorded.items() if k not in _BODY_FORMS}
        return {**kept, "headers": headers, "body": value}
    return value
