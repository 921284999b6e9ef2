"""Evaluators: plain callables from a run's ``RunView`` to one or more ``Evaluation``s, and the built-in rules.

An evaluator is any callable ``(view) -> Evaluation | Iterable[Evaluation]``. A rule leaves
``judge_model`` empty; an LLM judge is the user's callable and names its model, either on each
``Evaluation`` or as a ``judge_model`` attribute of the callable. ``criteria_version`` left empty
is stamped by ``regress`` or ``rescore`` with theirs, so a change of criteria shows as a new
version of the rows, never as a change of the agent.

The built-ins are factories, so each can be configured: ``tool_success()``,
``no_out_of_bounds()``, ``output_matches_schema(schema)``, ``required_keys("answer", ...)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from otel_agent_replay.comparison import ObservedCall, RunView
from otel_agent_replay.core import ConfigurationError, StepKind
from otel_agent_replay.store import OUT_OF_BOUNDS, Evaluation

__all__ = [
    "Evaluator",
    "evaluate",
    "no_out_of_bounds",
    "output_matches_schema",
    "required_keys",
    "tool_success",
]

Evaluator = Callable[[RunView], Evaluation | Iterable[Evaluation]]
"""A callable judging one run: returns one ``Evaluation`` or several."""

_SHOWN: Final = 5


def _tool_calls(view: RunView) -> list[ObservedCall]:
    return [c for c in view.calls if c.kind == StepKind.TOOL]


def _error_of(call: ObservedCall) -> str | None:
    """Why a tool call failed: its exception, or an ``{"error": "..."}`` answer (as the store counts it)."""
    if call.error is not None:
        return call.error.rsplit(".", 1)[-1]  # a tape has builtins.KeyError, a replay KeyError: one spelling
    result = call.result
    if isinstance(result, Mapping):
        error = result.get("error")
        if isinstance(error, str) and error:
            return error
    return None


def _name(evaluator: object) -> str:
    return str(getattr(evaluator, "__name__", None) or type(evaluator).__name__)


def tool_success(min_rate: float = 1.0, *, metric: str = "tool_success") -> Evaluator:
    """Passes when at least ``min_rate`` of the run's tool calls succeeded (no exception, no error answer).

    The score is the success rate (1.0 for a run without tool calls).
    """
    if not 0.0 <= min_rate <= 1.0:
        raise ConfigurationError(f"tool_success(min_rate={min_rate!r}): give a rate from 0 to 1")

    def tool_success(view: RunView) -> Evaluation:
        calls = _tool_calls(view)
        failed = [(c, _error_of(c)) for c in calls]
        failed = [(c, e) for c, e in failed if e is not None]
        rate = 1.0 if not calls else (len(calls) - len(failed)) / len(calls)
        shown = ", ".join(f"{c.tool} (seq {c.seq}): {e}" for c, e in failed[:_SHOWN])
        more = f" and {len(failed) - _SHOWN} more" if len(failed) > _SHOWN else ""
        why = f"{len(failed)} of {len(calls)} tool call(s) failed: {shown}{more}" if failed else None
        return Evaluation(
            metric,
            score=rate,
            passed=rate >= min_rate,
            explanation=why or f"all {len(calls)} tool call(s) succeeded",
        )

    return tool_success


def no_out_of_bounds(*, metric: str = "no_out_of_bounds") -> Evaluator:
    """Passes when no tool call was answered out of bounds (``unexpected_tool_call``); the score is the count."""

    def no_out_of_bounds(view: RunView) -> Evaluation:
        tools = [c.tool for c in _tool_calls(view) if _error_of(c) == OUT_OF_BOUNDS]
        why = f"out-of-bounds call(s): {', '.join(tools)}" if tools else "every tool call was on the recording"
        return Evaluation(metric, score=float(len(tools)), passed=not tools, explanation=why)

    return no_out_of_bounds


def output_matches_schema(schema: Mapping[str, Any], *, metric: str = "output_schema") -> Evaluator:
    """Passes when the run's final output validates against a JSON Schema (the ``jsonschema`` package).

    Install it with ``pip install 'otel-agent-replay[regression]'``. The schema is checked when
    the evaluator is made, so a broken schema fails at once, not on every run.
    """
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the dev extra installs it
        raise ConfigurationError(
            "output_matches_schema needs the jsonschema package: pip install 'otel-agent-replay[regression]'"
        ) from None
    schema = dict(schema)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"output_matches_schema: the schema is not valid: {exc.message}") from None
    validator = validator_class(schema)

    def output_matches_schema(view: RunView) -> Evaluation:
        errors = sorted(validator.iter_errors(view.final_output), key=lambda e: list(e.absolute_path))
        if not errors:
            return Evaluation(metric, score=1.0, passed=True, explanation="the output matches the schema")
        shown = "; ".join(f"{e.json_path}: {e.message}" for e in errors[:_SHOWN])
        return Evaluation(metric, score=0.0, passed=False, explanation=f"{len(errors)} schema error(s): {shown}")

    return output_matches_schema


def required_keys(*keys: str, metric: str = "required_keys") -> Evaluator:
    """Passes when the final output is a JSON object holding every key (``a.b`` reaches into nested objects).

    The score is the share of keys present.
    """
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise ConfigurationError(f"required_keys{keys!r}: name at least one key")

    def present(output: Any, path: str) -> bool:
        node = output
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return True

    def required_keys(view: RunView) -> Evaluation:
        missing = [k for k in keys if not present(view.final_output, k)]
        why = f"missing from the output: {', '.join(missing)}" if missing else f"the output has {', '.join(keys)}"
        return Evaluation(metric, score=(len(keys) - len(missing)) / len(keys), passed=not missing, explanation=why)

    return required_keys


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def evaluate(
    view: RunView, evaluators: Iterable[Evaluator], *, criteria_version: str | None = None
) -> tuple[list[Evaluation], list[str]]:
    """Run every evaluator on ``view``: the evaluations (stamped) and the problems, one per evaluator that failed.

    An evaluator that raises, returns nothing (None, an empty list) or something other than
    ``Evaluation``s gives a problem naming it: a broken judge is neither the agent's failure nor its
    pass, and ``regress`` makes such a run ``error``.
    """
    out: list[Evaluation] = []
    problems: list[str] = []
    for evaluator in evaluators:
        try:
            answer = evaluator(view)
            if isinstance(answer, Evaluation):
                items: list[Any] = [answer]
            elif isinstance(answer, Iterable) and not isinstance(answer, (str, bytes, Mapping)):
                items = list(answer)
            else:
                problems.append(f"evaluator {_name(evaluator)} returned {_short(answer)}, not an Evaluation")
                continue
        except Exception as exc:
            problems.append(f"evaluator {_name(evaluator)} raised {type(exc).__name__}: {exc}")
            continue
        if not items:
            problems.append(f"evaluator {_name(evaluator)} returned no evaluation")
            continue
        judge = getattr(evaluator, "judge_model", None)
        for item in items:
            if not isinstance(item, Evaluation):
                problems.append(f"evaluator {_name(evaluator)} returned {_short(item)}, not an Evaluation")
                continue
            if item.passed is None and item.score is None:
                problems.append(f"evaluator {_name(evaluator)} returned {item.metric!r} with neither passed nor score")
                continue
            changes: dict[str, Any] = {}
            if item.criteria_version is None and criteria_version is not None:
                changes["criteria_version"] = criteria_version
            if item.judge_model is None and isinstance(judge, str):
                changes["judge_model"] = judge
            out.append(dataclasses.replace(item, **changes) if changes else item)
    return out, problems
