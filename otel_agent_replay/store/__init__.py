"""The evidence store: sessions, messages, tool calls and evaluations across runs and versions.

``open_store(path_or_url)`` opens a SQLite file (the default) or a PostgreSQL database
(``postgresql://…``); ``Store.ingest`` loads tapes into it; ``report_rows`` and ``format_report``
compare agent versions, and per case the pass rates of repeated runs with a verdict
(``case_report``); ``golden`` writes a regression set of tapes sampled per tag. The four
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
    parse_thresholds,
    report_rows,
)
from ._report_formats import format_report
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
from ._verdicts import (
    CaseComparison,
    CaseRate,
    CaseReport,
    CaseVerdict,
    PriceFn,
    VerdictRule,
    VersionSpend,
    case_report,
)

__all__ = [
    "LATEST_VERSION",
    "METRICS",
    "OUT_OF_BOUNDS",
    "CaseComparison",
    "CaseRate",
    "CaseReport",
    "CaseVerdict",
    "EvalRow",
    "Evaluation",
    "EvidenceReport",
    "GoldenTape",
    "IngestResult",
    "MessageRow",
    "MetricDelta",
    "PriceFn",
    "SessionRow",
    "Store",
    "StoreError",
    "Threshold",
    "ToolCallRow",
    "VerdictRule",
    "VersionComparison",
    "VersionMetrics",
    "VersionSpend",
    "case_report",
    "format_report",
    "golden",
    "metrics_by",
    "open_store",
    "parse_thresholds",
    "redact_url",
    "report_rows",
    "write_session_tape",
]
