"""The regression run: a new agent version on recorded sessions, offline, judged and stored by version.

``regress(suite, agent, agent_version=..., store=...)`` replays each recorded run's tools while
the agent decides again (out of bounds: a call the recording does not have is answered with
``unexpected_tool_call``), stores the new run and its evaluations; ``rescore`` judges stored
sessions again under new criteria. Evaluators are plain callables over a ``RunView``; the rules
``tool_success``, ``no_out_of_bounds``, ``output_matches_schema`` and ``required_keys`` are built in.
"""

from __future__ import annotations

from ._cases import DriftRule, call_agent
from ._evaluators import (
    Evaluator,
    evaluate,
    no_out_of_bounds,
    output_matches_schema,
    required_keys,
    tool_success,
)
from ._regress import regress, rescore
from ._results import CaseRuns, RegressCase, RegressResult, RescoredSession

__all__ = [
    "CaseRuns",
    "DriftRule",
    "Evaluator",
    "RegressCase",
    "RegressResult",
    "RescoredSession",
    "call_agent",
    "evaluate",
    "no_out_of_bounds",
    "output_matches_schema",
    "regress",
    "required_keys",
    "rescore",
    "tool_success",
]
