"""``RunView``: assertions over what a run did, from a tape or from a replay.

A view is the run's calls in order (tool and model steps with their arguments, results,
errors and token usage) and its final output. The assertion methods raise
``AssertionError`` with a message that shows what the run actually did, and return the
view, so they chain: ``view.called_with("search", limit=5).never_called("send_email")``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from otel_agent_replay.core import StepKind
from otel_agent_replay.tape import Run, Tape, load_tape

from ._diff import short


@dataclass(frozen=True, slots=True)
class ObservedCall:
    """One call as a view sees it."""

    kind: str
    tool: str
    args: Any
    result: Any
    error: str | None
    seq: int
    input_tokens: int | None = None
    output_tokens: int | None = None


def _from_run(run: Run) -> tuple[ObservedCall, ...]:
    return tuple(
        ObservedCall(
            kind=s.kind,
            tool=s.tool,
            args=s.args,
            result=s.result if s.error is None else None,
            error=s.error.type if s.error else None,
            seq=s.seq,
            input_tokens=s.input_tokens,
            output_tokens=s.output_tokens,
        )
        for s in run.steps
    )


class RunView:
    """What one run did, in order; build it with ``RunView(run_or_tape_path)`` or ``session.view()``."""

    def __init__(self, source: Run | Tape | str | os.PathLike[str]) -> None:
        if not isinstance(source, Run):
            tape = source if isinstance(source, Tape) else load_tape(source)
            if len(tape.runs) != 1:
                raise ValueError(
                    f"{tape.path} has {len(tape.runs)} runs; pick one: RunView(tape.run(run_id)) or tape.runs[i]"
                )
            source = tape.runs[0]
        self.label = f"run {source.run_id}"
        self.calls: tuple[ObservedCall, ...] = _from_run(source)
        self.final_output: Any = source.output

    @classmethod
    def of_calls(cls, calls: Sequence[ObservedCall], output: Any, *, label: str) -> RunView:
        """A view of calls observed some other way (a replay)."""
        view = cls.__new__(cls)
        view.label = label
        view.calls = tuple(sorted(calls, key=lambda c: c.seq))
        view.final_output = output
        return view

    # --- facts -----------------------------------------------------------------------

    @property
    def tools_called(self) -> list[str]:
        """Tool names in call order (model steps left out), repeats included."""
        return [c.tool for c in self.calls if c.kind == StepKind.TOOL]

    @property
    def tool_names(self) -> set[str]:
        """The distinct tools called."""
        return set(self.tools_called)

    @property
    def step_count(self) -> int:
        """All steps, tool and model."""
        return len(self.calls)

    @property
    def tokens_in(self) -> int:
        """Input tokens over all model steps."""
        return sum(c.input_tokens or 0 for c in self.calls)

    @property
    def tokens_out(self) -> int:
        """Output tokens over all model steps."""
        return sum(c.output_tokens or 0 for c in self.calls)

    def calls_of(self, tool: str) -> list[ObservedCall]:
        """Every call of one tool (or model function), in order."""
        return [c for c in self.calls if c.tool == tool]

    # --- assertions --------------------------------------------------------------------

    def _describe(self) -> str:
        if not self.calls:
            return f"{self.label} made no calls"
        lines = [f"{self.label} made {len(self.calls)} call(s):"]
        lines.extend(f"  {c.seq:>3} {c.tool} {short(c.args, 90)}" for c in self.calls[:30])
        if len(self.calls) > 30:
            lines.append(f"  … and {len(self.calls) - 30} more")
        return "\n".join(lines)

    def order_before(self, first: str, then: str) -> RunView:
        """Assert that ``first`` was called, and before any call of ``then``."""
        firsts = [c.seq for c in self.calls if c.tool == first]
        thens = [c.seq for c in self.calls if c.tool == then]
        if not firsts:
            raise AssertionError(f"expected {first} before {then}, but {first} was never called\n{self._describe()}")
        if thens and min(thens) < min(firsts):
            raise AssertionError(
                f"expected {first} before {then}, but {then} came first (seq {min(thens)} < {min(firsts)})\n"
                f"{self._describe()}"
            )
        return self

    def called_with(self, tool: str, **partial_args: Any) -> RunView:
        """Assert that some call of ``tool`` had (at least) these argument values."""
        calls = self.calls_of(tool)
        for call in calls:
            if isinstance(call.args, dict) and all(
                k in call.args and call.args[k] == v and type(call.args[k]) is type(v) for k, v in partial_args.items()
            ):
                return self
        wanted = ", ".join(f"{k}={v!r}" for k, v in partial_args.items())
        if not calls:
            raise AssertionError(f"expected {tool}({wanted}), but {tool} was never called\n{self._describe()}")
        seen = "\n".join(f"  seq {c.seq}: {short(c.args, 120)}" for c in calls)
        raise AssertionError(f"expected a call {tool}({wanted}); its calls were:\n{seen}")

    def never_called(self, tool: str) -> RunView:
        """Assert that ``tool`` was not called at all."""
        calls = self.calls_of(tool)
        if calls:
            seqs = ", ".join(str(c.seq) for c in calls)
            raise AssertionError(f"expected {tool} never to be called; it was called at seq {seqs}\n{self._describe()}")
        return self

    def __repr__(self) -> str:
        return f"RunView({self.label}, {self.step_count} steps)"
