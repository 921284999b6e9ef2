"""``check`` and the stand-ins a tape says it holds: a stand-in is not a finding, a real secret still is.

A recorded tape names its stand-ins on each step (``agent_replay.stand_ins``, ``agent_replay.result_stand_ins``:
stand-in -> the marker it stands for). ``check`` reads them first, then decides each value the redaction
walk would change on the value with those stand-ins put back as their markers: what is left to redact is
a secret, and a value whose only change was a stand-in is not reported.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from otel_agent_replay.capture import DEFAULT_REDACTOR, MARKER, StandInTable
from otel_agent_replay.core import attributes as A
from otel_agent_replay.tape import clean_attribute

__all__ = ["only_stand_ins", "tape_stand_ins"]

_NAMES = (A.STAND_INS, A.RESULT_STAND_INS)


def tape_stand_ins(messages: list[Any]) -> StandInTable:
    """The stand-ins the spans of a tape's OTLP messages name (arguments' first)."""
    found: dict[str, list[object]] = {name: [] for name in _NAMES}
    for message in messages:
        for rs in message.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    for kv in span.attributes:
                        if kv.key in found and kv.value.WhichOneof("value") == "string_value":
                            found[kv.key].append(kv.value.string_value)
    return StandInTable.from_attributes([*found[A.STAND_INS], *found[A.RESULT_STAND_INS]])


_MARKED = re.compile(MARKER.pattern + r"(?:…\[truncated [0-9]+ chars(?: sha256:[0-9a-f]+)?\])?")


def _plain(value: Any) -> str:
    """``value`` as JSON text with every marker the same (a marker is redacted, whatever its kind, and a
    stand-in cut by a size cap stands for a marker all the same)."""
    return _MARKED.sub("[REDACTED]", orjson.dumps(value, default=str).decode("utf-8"))


def _is_table(table: StandInTable, before: Any) -> bool:
    """Whether ``before`` is a step's own list of its stand-ins (``agent_replay.stand_ins``)."""
    if not isinstance(before, str) or not before.startswith("{"):
        return False
    try:
        data = orjson.loads(before)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and bool(data)
        and all(k in table and isinstance(v, str) and MARKER.fullmatch(v) for k, v in data.items())
    )


def only_stand_ins(table: StandInTable, before: Any) -> bool:
    """Whether all the default redaction would change in ``before`` (a value ``check``'s walk reported) is
    stand-ins of ``table``."""
    if not table:
        return False
    if _is_table(table, before):
        return True
    restored = table.restore(before) if isinstance(before, (str, dict, list)) else before
    if restored == before:
        return False
    if isinstance(restored, dict) and len(restored) == 1:  # {attribute key: value} under a secret key
        (value,) = restored.values()
        if isinstance(value, str) and MARKER.fullmatch(value):
            return True
    return _plain(clean_attribute(DEFAULT_REDACTOR, "", restored)) == _plain(restored)
