"""Every option with a fixed set of values: a ``str`` enum and the ``Literal`` of its spellings.

The enums are ``str`` subclasses, so ``RecordMode.NONE == "none"`` and a value read back from a
tape or a command line compares equal to its member. Public signatures take either form
(``mode="once"`` or ``mode=RecordMode.ONCE``); ``choice`` turns a value into its member or raises
a ``ConfigurationError`` that lists the allowed spellings.
"""

from __future__ import annotations

import enum
from typing import Literal, TypeVar

from ._errors import ConfigurationError


class Choice(str, enum.Enum):
    """A ``str`` enum whose ``str()`` and format are its value (``enum.StrEnum`` is 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)


class RecordMode(Choice):
    """How a replay treats the tape (vcrpy's names)."""

    NONE = "none"
    """Strict replay: every call must be on the tape."""
    ONCE = "once"
    """Record when the tape is missing, else replay strictly."""
    NEW_EPISODES = "new_episodes"
    """Replay; a miss of a read-only tool runs live and is appended to its recorded run."""
    ALL = "all"
    """Record again, replacing the tape when the block ends without an error."""


class SideEffect(Choice):
    """What a tool declares it does outside the process."""

    READ_ONLY = "read_only"
    WRITE = "write"
    EXTERNAL = "external"
    """Sends, pays or deletes outside the process."""
    UNDECLARED = "undeclared"
    """Nothing was declared: treated as not read-only."""


class StepKind(Choice):
    """What a step is: a tool call, a model (LLM) call, or an HTTP request that no model route matched
    (a tool step whose tool is ``{METHOD} {host}{path}``)."""

    TOOL = "tool"
    LLM = "llm"
    HTTP = "http"


class SideEffectPolicy(Choice):
    """What a replay does with a tool that is not read-only."""

    REFUSE = "refuse"
    STUB = "stub"
    """Serve its recorded result without running it."""


class OutsidePolicy(Choice):
    """What a replay does with a decorated call made from a context that carries no replay.

    A thread or task that did not receive a copy of the replay's context (a ``threading.Thread``
    or an executor worker started without ``contextvars.copy_context().run``, a thread or task
    created before the block) cannot be served by the replay.
    """

    REFUSE = "refuse"
    """Refuse every such call with ``SideEffectRefused`` (the default: fail closed)."""
    READ_ONLY = "read_only"
    """Let read-only tools run live there; refuse the others."""


class ModelPolicy(Choice):
    """Where a replay gets model calls from."""

    TAPE = "tape"
    LIVE = "live"


class Pace(Choice):
    """How a replay hands out a recorded stream's chunks."""

    NONE = "none"
    """At once."""
    RECORDED = "recorded"
    """At the offsets they arrived at when recorded."""


class Then(Choice):
    """What a replay does at its first divergence (``replay(then=...)``)."""

    RAISE = "raise"
    """Fail: the strict replay."""
    LIVE = "live"
    """Fork: that call and every later one run live (a tool that is not read-only stays under the
    side-effect policy)."""
    FALLBACKS = "fallbacks"
    """Fork: later calls go to the contract fakes of ``fallbacks=``."""


class NetworkPolicy(Choice):
    """Whether a strict replay lets the agent's code open connections to hosts not allowed."""

    BLOCK = "block"
    """Outgoing connections to hosts not in ``allow_hosts`` raise ``NetworkBlocked``."""
    ALLOW = "allow"
    """No guard."""


class StalePolicy(Choice):
    """What a replay does when a tool's version changed since recording."""

    WARN = "warn"
    ERROR = "error"


class MissPolicy(Choice):
    """What a replay does with a tool call the tape does not have (a miss)."""

    RAISE = "raise"
    """Fail with ``TapeMiss`` (strict)."""
    ERROR_RESULT = "error_result"
    """Answer ``{"error": "unexpected_tool_call", "tool": name}`` and go on: an out-of-bounds replay."""


class DriftPolicy(Choice):
    """What a replay does with drift: a call of a tool the tape has at this position, with other arguments."""

    RAISE = "raise"
    """Fail with ``TapeDrift`` (strict)."""
    COUNT = "count"
    """Answer the call as a repetition does and go on, counting it (``drift_events`` and the report): a
    read-only tool the tape cannot answer with these arguments gets its fallback or, under
    ``on_miss="error_result"``, the out-of-bounds answer; a stubbed tool that is not read-only gets its
    fallback or its recorded call at this position (it never runs). A model call's drift still raises."""


class DivergenceKind(Choice):
    """One vocabulary for what differs: a replay's report and ``compare``'s differences.

    A replay reports ``drift``, ``miss``, ``out_of_bounds``, ``refused``, ``unused``, ``stale``,
    ``expired``, ``run_count``, ``order``, ``blocked`` (a connection the network guard stopped) and
    ``agent`` (a run whose agent the tape does not have); ``compare`` reports ``run_count`` and the
    kinds from ``task`` to ``output``, in the order listed (behaviour before data). ``order``: two
    steps that ran one after the other on one side ran the other way round on the other side.
    """

    DRIFT = "drift"
    MISS = "miss"
    OUT_OF_BOUNDS = "out_of_bounds"
    """A miss answered with an ``unexpected_tool_call`` error result (``on_miss="error_result"``)."""
    REFUSED = "refused"
    UNUSED = "unused"
    STALE = "stale"
    EXPIRED = "expired"
    RUN_COUNT = "run_count"
    BLOCKED = "blocked"
    AGENT = "agent"
    TASK = "task"
    INPUT = "input"
    STEP_MISSING = "step_missing"
    STEP_EXTRA = "step_extra"
    TOOL = "tool"
    ORDER = "order"
    PARENT = "parent"
    ARGS = "args"
    RESULT = "result"
    ERROR = "error"
    SIDE_EFFECT = "side_effect"
    OUTPUT = "output"


class CauseOrigin(Choice):
    """What a cause in ``compare``'s causal diff is: the first difference in what the agent was given."""

    EDIT = "edit"
    """An edited step's result (the fork's ``edit=``)."""
    TOOL_RESULT = "tool_result"
    """A tool asked the same gave another result (or error)."""
    MODEL_ANSWER = "model_answer"
    """A model asked the same answered otherwise."""
    ARGUMENT = "argument"
    """An argument the code changed (a prompt, a parameter) that no earlier difference carries."""
    INPUT = "input"
    """The run's task or input."""
    STEP = "step"
    """A step one side made and the other did not (or another tool, order, parent) before any other cause."""
    OUTPUT = "output"
    """The run's output, with nothing before it that differs."""
    RUNS = "runs"
    """The tapes hold different numbers of runs."""


class Carried(Choice):
    """How a consequence follows from its cause."""

    DATA = "data"
    """The changed value (or what a model wrote from it) appears in this difference's new value."""
    INPUT = "input"
    """The step's input carried the cause, so its output that differs is the cause's too."""
    PARENT = "parent"
    """The step's causal parent (``parent_step_id``) is part of the cause's chain."""
    AFTER = "after"
    """No data link: the step came after the cause in the run (a branch the code took, a step left out)."""


RecordModeName = Literal["none", "once", "new_episodes", "all"]
SideEffectName = Literal["read_only", "write", "external"]
SideEffectPolicyName = Literal["refuse", "stub"]
ModelPolicyName = Literal["tape", "live"]
OutsidePolicyName = Literal["refuse", "read_only"]
StalePolicyName = Literal["warn", "error"]
MissPolicyName = Literal["raise", "error_result"]
DriftPolicyName = Literal["raise", "count"]
PaceName = Literal["none", "recorded"]
ThenName = Literal["raise", "live", "fallbacks"]
NetworkPolicyName = Literal["block", "allow"]

C = TypeVar("C", bound=Choice)


def choice(kind: type[C], value: object, call: str, option: str, *, allowed: tuple[C, ...] | None = None) -> C:
    """``value`` as a member of ``kind``, else a ``ConfigurationError``: ``call(option=value)`` and the choices."""
    if type(value) is kind and (allowed is None or value in allowed):
        return value  # already a member (options copied with replace() check theirs again)
    members = allowed if allowed is not None else tuple(kind)
    if isinstance(value, str):
        for member in members:
            if member.value == value:
                return member
    spellings = ", ".join(repr(m.value) for m in members)
    raise ConfigurationError(f"{call}({option}={value!r}): use one of {spellings}")


DECLARABLE_SIDE_EFFECTS: tuple[SideEffect, ...] = (SideEffect.READ_ONLY, SideEffect.WRITE, SideEffect.EXTERNAL)
"""What a tool may declare (``undeclared`` is the absence of a declaration)."""
