"""The evidence store: sessions, messages, tool calls and evaluations across runs and versions.

``open_store(path_or_url)`` opens a SQLite file (the default) or a PostgreSQL database
(``postgresql://…``); ``Store.ingest`` loads tapes into it; ``report_rows`` and ``format_report``
compare agent versions; ``golden`` writes a regression set of tapes sampled per tag. The four
tables ``agent_session``, ``message``, ``tool_call`` and ``eval_record`` are a contract; see
``_schema`` for the rest.
"""

from __future__ import annotations

from otel_agent_replay.core import StoreError

from ._backend import redact_url
from ._golden import GoldenTape, golden, write_session_tape
from ._ingest import IngestResult
from ._metrics import METRICS, VersionMetrics, metrics_by
from ._report import (
    EvidenceReport,
    MetricDelta,
    Threshold,
    VersionComparison,
    format_report,
    parse_thresholds,
    report_rows,
)
from ._rows import OUT_OF_BOUNDS
from ._schema import LATEST_VERSION
from ._store import (
    EvalRow,
    Evaluation,
    MessageRow,
    SessionRow,
    Store,
    ToolCallRow,
    open_store,
)

__all__ = [
    "LATEST_VERSION",
    "METRICS",
    "OUT_OF_BOUNDS",
    "EvalRow",
    "Evaluation",
    "EvidenceReport",
    "GoldenTape",
    "IngestResult",
    "MessageRow",
    "MetricDelta",
    "SessionRow",
    "Store",
    "StoreError",
    "Threshold",
    "ToolCallRow",
    "VersionComparison",
    "VersionMetrics",
    "format_report",
    "golden",
    "metrics_by",
    "open_store",
    "parse_thresholds",
    "redact_url",
    "report_rows",
    "write_session_tape",
]
