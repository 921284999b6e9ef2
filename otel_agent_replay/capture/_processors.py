"""A user's redaction processors: what they take and give, and what happens when one fails.

A processor (``Redactor(processors=...)``) is a plain callable, structlog style: it takes the JSON data
of one value, after the built-in passes, and returns new JSON data. It sees values only: the tape's own
structure (schema version, ids, kinds, side effects, call keys) is read with the redactor's
``without_processors``. A processor that raises, or returns something that is not JSON data (a set, an
object), has that value replaced by ``[REDACTED:processor_error]``, never the step lost; it is warned
about once per processor of a redactor, naming it and what to return; the log gets the exception's
type only, never its message, which may quote the secret.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import TypeAlias

import orjson

from otel_agent_replay.core import RecordingWarning

from ._canonical import JSONValue
from ._redact_rules import pattern_placeholder

__all__ = ["RedactionProcessor", "run_processors"]

_log = logging.getLogger("otel_agent_replay.redact")

RedactionProcessor: TypeAlias = Callable[[JSONValue], JSONValue]
"""A plain callable, structlog style: takes JSON data and returns new JSON data."""


def run_processors(processors: Sequence[RedactionProcessor], data: JSONValue, warned: set[int]) -> JSONValue:
    """``data`` through ``processors`` in order; a failing one (it raised, or gave back what is not JSON data)
    makes the value ``[REDACTED:processor_error]``. ``warned``: the ids of the processors already warned of."""
    for processor in processors:
        try:
            data = processor(data)
            orjson.dumps(data)  # it must give back JSON data: a set or an object would lose the step
        except Exception as exc:  # KeyboardInterrupt and SystemExit propagate
            _failed(processor, exc, warned)
            return pattern_placeholder("processor_error")
    return data


def _failed(processor: RedactionProcessor, exc: Exception, warned: set[int]) -> None:
    # the value is replaced every time; the warning is said once per processor of a redactor
    if id(processor) in warned:
        return
    warned.add(id(processor))
    name = getattr(processor, "__qualname__", type(processor).__qualname__)
    module = getattr(processor, "__module__", "")
    what = (
        f"returned data that is not JSON ({exc})"
        if isinstance(exc, (TypeError, orjson.JSONEncodeError))
        else f"raised {type(exc).__name__}"
    )
    # Only the exception's type goes to the log, never its message, which may quote the secret.
    _log.warning("redaction processor %s raised %s; the value was replaced", name, type(exc).__name__)
    warnings.warn(
        f"redaction processor {module + '.' if module else ''}{name} {what}; the value was replaced by "
        f"{pattern_placeholder('processor_error')!r} and the step kept. A processor takes JSON data (dict, list, "
        "str, int, float, bool, None) and must return JSON data",
        RecordingWarning,
        stacklevel=3,  # the redactor's own frame
    )
