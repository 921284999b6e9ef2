"""Metrics per group of sessions (by default per agent version), computed in SQL from stored rows.

- ``sessions``: sessions in the group.
- ``tool_success_rate``: tool calls with status ``ok`` / all tool calls.
- ``latency_ms_avg``, ``latency_ms_max``: a session's duration (its run span's, kept at sub-millisecond
  precision in ``agent_session.latency_ms``), over the sessions that finished.
- ``retry_rate``: tool calls that repeat the call right before them in their session (same call
  key, the previous tool call by seq) / all tool calls. An agent that re-sends a failed or
  unanswered call is retrying; one that calls the same tool with other arguments is not.
- ``out_of_bounds_calls``: tool calls whose ``error`` is ``unexpected_tool_call`` (an out-of-bounds
  replay answered them instead of the tool), with the tools' names in ``out_of_bounds_tools``.
- ``pass_rate``: ``eval_record`` rows with ``pass`` true / rows with ``pass`` set (optionally of
  one ``criteria_version``).
- ``tokens_in``, ``tokens_out``: model steps' input and output tokens, summed.

A rate is None when there is nothing to divide (no tool calls, no evaluations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from otel_agent_replay.core import ConfigurationError

from ._rows import OUT_OF_BOUNDS
from ._store import Store, session_filter

__all__ = ["GROUPINGS", "METRICS", "Grouping", "VersionMetrics", "metrics_by"]

Grouping = Literal["agent_version", "agent_name", "task"]
GROUPINGS: Final = ("agent_version", "agent_name", "task")
METRICS: Final = (
    "sessions",
    "tool_success_rate",
    "latency_ms_avg",
    "latency_ms_max",
    "retry_rate",
    "out_of_bounds_calls",
    "pass_rate",
    "tokens_in",
    "tokens_out",
)
"""The report's metrics, in the order of its columns."""


@dataclass(frozen=True, slots=True)
class VersionMetrics:
    """The metrics of one group of sessions (one agent version, by default)."""

    group: str | None
    """The group's value (the agent version); None for sessions without one."""
    sessions: int
    tool_calls: int
    tool_success_rate: float | None
    latency_ms_avg: float | None
    latency_ms_max: float | None
    retry_rate: float | None
    out_of_bounds_calls: int
    pass_rate: float | None
    evals: int
    tokens_in: int
    tokens_out: int
    out_of_bounds_tools: tuple[tuple[str, int], ...] = ()
    """(tool, out-of-bounds calls) for each tool that had any, most first."""
    first_started_at: int = 0

    def metric(self, name: str) -> float | None:
        """A metric by name (one of ``METRICS``)."""
        value = getattr(self, name)
        return None if value is None else float(value)


def _rate(part: Any, whole: Any) -> float | None:
    return None if not whole else float(part) / float(whole)


def metrics_by(
    store: Store,
    by: Grouping = "agent_version",
    *,
    agent_name: str | None = None,
    tag: str | None = None,
    criteria_version: str | None = None,
) -> list[VersionMetrics]:
    """One ``VersionMetrics`` per group, in the order the groups first appear (oldest session first)."""
    if by not in GROUPINGS:
        raise ConfigurationError(f"report by {by!r}: group by one of {', '.join(GROUPINGS)}")
    where, params = session_filter(tag=tag, agent_name=agent_name)
    # Every query joins the sessions it may count through the same filter.
    sessions_of = f"SELECT s.session_id, s.{by} AS grp FROM agent_session s{where}"
    eval_where = " WHERE e.criteria_version = ?" if criteria_version is not None else ""
    eval_params = [criteria_version] if criteria_version is not None else []
    queries = {
        "sessions": (
            f"SELECT s.{by}, COUNT(*), AVG(s.latency_ms), MAX(s.latency_ms), MIN(s.started_at) "
            f"FROM agent_session s{where} GROUP BY s.{by}",
            params,
        ),
        "tools": (
            f"SELECT g.grp, COUNT(*), SUM(CASE WHEN c.status = 'ok' THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN c.error = ? THEN 1 ELSE 0 END) "
            f"FROM tool_call c JOIN ({sessions_of}) g ON g.session_id = c.session_id GROUP BY g.grp",
            [OUT_OF_BOUNDS, *params],
        ),
        "retries": (
            f"SELECT r.grp, SUM(r.again) FROM (SELECT g.grp AS grp, CASE WHEN c.call_key = LAG(c.call_key) "
            f"OVER (PARTITION BY c.session_id ORDER BY c.seq) THEN 1 ELSE 0 END AS again "
            f"FROM tool_call c JOIN ({sessions_of}) g ON g.session_id = c.session_id) r GROUP BY r.grp",
            params,
        ),
        "oob": (
            f"SELECT g.grp, c.tool_name, COUNT(*) FROM tool_call c JOIN ({sessions_of}) g "
            f"ON g.session_id = c.session_id WHERE c.error = ? GROUP BY g.grp, c.tool_name",
            [*params, OUT_OF_BOUNDS],
        ),
        "tokens": (
            f"SELECT g.grp, SUM(p.input_tokens), SUM(p.output_tokens) FROM tape_span p JOIN ({sessions_of}) g "
            f"ON g.session_id = p.session_id WHERE p.kind = 'llm' GROUP BY g.grp",
            params,
        ),
        "evals": (
            f"SELECT g.grp, SUM(CASE WHEN e.pass IS NOT NULL THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN e.pass THEN 1 ELSE 0 END) FROM eval_record e JOIN ({sessions_of}) g "
            f"ON g.session_id = e.session_id{eval_where} GROUP BY g.grp",
            [*params, *eval_params],
        ),
    }
    with store._backend.read() as tx:
        found = {name: tx.fetchall(sql, args) for name, (sql, args) in queries.items()}
    tools = {r[0]: r[1:] for r in found["tools"]}
    retries = {r[0]: r[1] for r in found["retries"]}
    tokens = {r[0]: r[1:] for r in found["tokens"]}
    evals = {r[0]: r[1:] for r in found["evals"]}
    oob: dict[Any, list[tuple[str, int]]] = {}
    for grp, tool, count in found["oob"]:
        oob.setdefault(grp, []).append((tool, int(count)))
    out = []
    for grp, count, lat_avg, lat_max, first in found["sessions"]:
        calls, ok, out_of_bounds = tools.get(grp, (0, 0, 0))
        tin, tout = tokens.get(grp, (0, 0))
        rated, passed = evals.get(grp, (0, 0))
        out.append(
            VersionMetrics(
                group=grp,
                sessions=int(count),
                tool_calls=int(calls),
                tool_success_rate=_rate(ok, calls),
                latency_ms_avg=None if lat_avg is None else float(lat_avg),
                latency_ms_max=None if lat_max is None else float(lat_max),
                retry_rate=_rate(retries.get(grp, 0), calls),
                out_of_bounds_calls=int(out_of_bounds or 0),
                pass_rate=_rate(passed, rated),
                evals=int(rated or 0),
                tokens_in=int(tin or 0),
                tokens_out=int(tout or 0),
                out_of_bounds_tools=tuple(sorted(oob.get(grp, ()), key=lambda item: (-item[1], item[0]))),
                first_started_at=int(first),
            )
        )
    out.sort(key=lambda m: (m.first_started_at, "" if m.group is None else m.group))
    return out
