"""The tape: its values (``Tape`` → ``Run`` → ``Step``) and loading from every format it comes in.

Our OTLP JSON Lines, the Collector's file export, one OTLP JSON document, and Jaeger JSON.
"""

from __future__ import annotations

from ._foreign import telemetry_step
from ._gaps import removed_lines
from ._jaeger import otlp_from_jaeger
from ._lineage import Lineage, lineage
from ._load import iter_spans, load_tape
from ._redacted import clean_attribute, clean_attributes, clean_string, clean_text, redact_record
from ._span import DECODE_ERRORS, SpanDataError, decode_problem
from ._values import Run, Step, StepError, Tape

__all__ = [
    "DECODE_ERRORS",
    "Lineage",
    "Run",
    "SpanDataError",
    "Step",
    "StepError",
    "Tape",
    "clean_attribute",
    "clean_attributes",
    "clean_string",
    "clean_text",
    "decode_problem",
    "iter_spans",
    "lineage",
    "load_tape",
    "otlp_from_jaeger",
    "redact_record",
    "removed_lines",
    "telemetry_step",
]
