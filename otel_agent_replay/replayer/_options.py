"""``ReplayOptions``: a replay's policy as one frozen value, so a test suite can define it once."""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from otel_agent_replay.capture import DEFAULT_REDACTOR, Redactor
from otel_agent_replay.core import (
    DEFAULT_LOCK_TIMEOUT,
    DriftPolicy,
    DriftPolicyName,
    MissPolicy,
    MissPolicyName,
    ModelPolicy,
    ModelPolicyName,
    NetworkPolicy,
    NetworkPolicyName,
    OutsidePolicy,
    OutsidePolicyName,
    Pace,
    PaceName,
    ProjectSettings,
    RecordMode,
    RecordModeName,
    SideEffect,
    SideEffectName,
    SideEffectPolicy,
    SideEffectPolicyName,
    StalePolicy,
    StalePolicyName,
    Then,
    ThenName,
)
from otel_agent_replay.integrations import HttpRoute

from ._fields import NORMALISE
from ._messages import API_HINTS, Hints

Overrides = Mapping[str | tuple[str, int], Any]
"""A tool (or ``(tool, n)``: its nth call) → the value or exception served instead of the recorded result."""


@dataclass(frozen=True)
class ReplayOptions:
    """How a replay serves calls. Every field is also a keyword of ``replay(...)``, which wins over it.

    Build once and share: ``STRICT_SUITE = ReplayOptions(stub=("send_invoice",), max_age=86400 * 30)``,
    then ``replay(path, STRICT_SUITE)`` or ``STRICT_SUITE.replace(allow_unused=True)``.
    """

    run_id: str | None = None
    """Replay only this recorded run."""
    trace_id: str | None = None
    """Replay only the runs of this trace."""
    mode: RecordMode | RecordModeName = RecordMode.NONE
    """``none`` (strict), ``once`` (record when the tape is missing), ``new_episodes`` (read-only misses
    run live and are appended), ``all`` (record again)."""
    side_effects: SideEffectPolicy | SideEffectPolicyName = SideEffectPolicy.REFUSE
    """``refuse`` tools that are not read-only, or ``stub`` them all with their recorded results."""
    stub: Iterable[str] = ()
    """Tools that are not read-only whose recorded results are served (they never run)."""
    fallbacks: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Tool → a fake that serves its misses."""
    overrides: Overrides = field(default_factory=dict)
    """Tool or ``(tool, n)`` → a value or exception served instead of the recorded result."""
    max_age: float | _dt.timedelta | None = None
    """Fail with ``TapeStale`` when a run is older than this (seconds or a timedelta)."""
    allow_unused: bool = False
    """Let recorded steps go unused without failing the replay."""
    models: ModelPolicy | ModelPolicyName = ModelPolicy.TAPE
    """``tape`` (model calls are replayed) or ``live`` (they run for real; tools stay replayed)."""
    spans: bool = True
    """Emit the replay's own run and step spans."""
    declare: Mapping[str, SideEffect | SideEffectName] = field(default_factory=dict)
    """Side effects for tools that declared none."""
    stale_versions: StalePolicy | StalePolicyName = StalePolicy.WARN
    """``warn`` or ``error`` when a tool's version changed since recording."""
    redactor: Redactor = DEFAULT_REDACTOR
    """The redactor the tape was recorded with (live arguments are redacted the same way)."""
    on_miss: MissPolicy | MissPolicyName = MissPolicy.RAISE
    """``raise`` (``TapeMiss``) or ``error_result``: a tool call the tape does not have is answered
    ``{"error": "unexpected_tool_call", "tool": name}`` (the tool never runs) and counted in
    ``out_of_bounds_calls``; the replay goes on and does not fail on it. Drift stays drift."""
    on_drift: DriftPolicy | DriftPolicyName = DriftPolicy.RAISE
    """``raise`` (``TapeDrift``) or ``count``: a tool called with other arguments than recorded at its
    position is answered as a repetition answers it (a read-only tool: its fallback or, with
    ``on_miss="error_result"``, the out-of-bounds answer; a stubbed tool that is not read-only: its
    fallback or its recorded call at that position, never run), counted in ``drift_events`` and noted
    in the report; the replay does not fail on it. A model call's drift still raises."""
    hints: Hints = API_HINTS
    """How the errors spell their fixes: the Python API's words by default (the pytest plugin gives
    its own, so a failing test says ``--agent-record-mode=all``)."""
    outside_calls: OutsidePolicy | OutsidePolicyName = OutsidePolicy.REFUSE
    """Decorated calls from a thread or task that does not carry the replay's context: ``refuse`` them all,
    or let ``read_only`` tools run live there."""
    pace: Pace | PaceName = Pace.NONE
    """``none`` hands out a recorded stream's chunks at once, ``recorded`` at their recorded offsets."""
    network: NetworkPolicy | NetworkPolicyName = NetworkPolicy.BLOCK
    """``block``: in a strict replay (mode ``none``) a connection from the replay's context to a host not in
    ``allow_hosts`` raises ``NetworkBlocked``; ``allow`` turns the guard off."""
    key_ignore: Mapping[str, Iterable[str]] = field(default_factory=dict)
    """Tool (or ``"*"``) → argument paths left out of its call key, on top of the tool's own ``key_ignore=``;
    recorded keys are recomputed from the recorded arguments with these rules."""
    allow_hosts: Iterable[str] | None = None
    """Hosts (names or IP addresses) the agent's code may connect to during a strict replay; None: loopback
    (``localhost``, 127.0.0.0/8, ``::1``); an empty list blocks loopback too."""
    allow_sockets: Iterable[str | os.PathLike[str]] | None = None
    """UNIX-domain socket paths (an abstract one starting with ``"\\0"``) the agent's code may connect and send
    to during a strict replay; None: every path while loopback is allowed by default (``allow_hosts`` not
    given: counted in ``loopback_connections`` and warned like loopback), no path once ``allow_hosts`` is given."""
    http: bool = True
    """Every HTTP request from the replay's context is answered from the tape (``False``: HTTP is left to the
    network guard alone)."""
    http_models: bool = True
    """Requests that match a model route are model steps (``False``: they are plain HTTP steps)."""
    http_routes: tuple[HttpRoute, ...] = ()
    """More model routes, checked before the default ones."""
    http_side_effects: Mapping[str, SideEffect | SideEffectName] = field(default_factory=dict)
    """``"METHOD host/path"`` patterns (fnmatch) → the side effect of the HTTP steps they match (by default
    ``GET``, ``HEAD`` and ``OPTIONS`` are read-only and every other method is external)."""
    mcp_side_effects: Mapping[str, SideEffect | SideEffectName] = field(default_factory=dict)
    """``"server/tool"`` patterns (fnmatch; the server's name from its handshake) → an MCP tool's side effect,
    over its server's annotations; by default the live server's annotations decide, and a tape's listing
    can only make a tool stricter."""
    then: Then | ThenName = Then.RAISE
    """At the first divergence: ``raise`` (strict), ``live`` (fork: that call and later ones run live; a
    tool that is not read-only stays under the side-effect policy) or ``fallbacks`` (later calls go to
    the fakes of ``fallbacks=``)."""
    edit: Mapping[str, Any] = field(default_factory=dict)
    """Step id (``search#2``) → a value to answer with instead of the recorded result, or an exception to
    raise: a counterfactual replay (with ``then="live"`` it reports where the run then differs)."""
    fork_tape: str | os.PathLike[str] | None = None
    """Where a replay with ``then=`` other than ``raise`` or with ``edit=`` writes its run (default: beside
    the tape, ``NAME.fork.jsonl``)."""
    passthrough: Iterable[str] = ()
    """Hosts (``host`` or ``host:port``) whose HTTP requests go live and are never recorded, each counted in
    ``passthrough_requests``; the network guard lets them through too."""
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    """How long a mode that writes the tape (``once`` on a missing tape, ``new_episodes``, ``all``) waits for
    another process that writes it (seconds), before it fails naming that process."""

    def __post_init__(self) -> None:
        for normalise in NORMALISE.values():
            normalise(self)

    # Typed reads of the fields normalised in __post_init__ (they hold members, not spellings).
    @property
    def record_mode(self) -> RecordMode:
        """``mode`` as a ``RecordMode``."""
        return cast(RecordMode, self.mode)

    @property
    def side_effect_policy(self) -> SideEffectPolicy:
        """``side_effects`` as a ``SideEffectPolicy``."""
        return cast(SideEffectPolicy, self.side_effects)

    @property
    def model_policy(self) -> ModelPolicy:
        """``models`` as a ``ModelPolicy``."""
        return cast(ModelPolicy, self.models)

    @property
    def stale_policy(self) -> StalePolicy:
        """``stale_versions`` as a ``StalePolicy``."""
        return cast(StalePolicy, self.stale_versions)

    @property
    def miss_policy(self) -> MissPolicy:
        """``on_miss`` as a ``MissPolicy``."""
        return cast(MissPolicy, self.on_miss)

    @property
    def drift_policy(self) -> DriftPolicy:
        """``on_drift`` as a ``DriftPolicy``."""
        return cast(DriftPolicy, self.on_drift)

    @property
    def outside_policy(self) -> OutsidePolicy:
        """``outside_calls`` as an ``OutsidePolicy``."""
        return cast(OutsidePolicy, self.outside_calls)

    @property
    def pace_policy(self) -> Pace:
        """``pace`` as a ``Pace``."""
        return cast(Pace, self.pace)

    @property
    def passthrough_hosts(self) -> frozenset[str]:
        """``passthrough`` as a set of lower-case ``host`` or ``host:port`` strings."""
        return cast(frozenset[str], self.passthrough)

    def passes_through(self, host: str, port: int | None) -> bool:
        """Whether HTTP to this host (and port) goes live under ``passthrough=``."""
        hosts = self.passthrough_hosts
        return bool(hosts) and (host in hosts or (port is not None and f"{host}:{port}" in hosts))

    @property
    def then_policy(self) -> Then:
        """``then`` as a ``Then``."""
        return cast(Then, self.then)

    @property
    def forks(self) -> bool:
        """Whether this replay may fork (``then=`` other than ``raise``, or ``edit=``): its run is written
        to a fork tape."""
        return self.then_policy != Then.RAISE or bool(self.edit)

    @property
    def guards_network(self) -> bool:
        """True when the network guard is on: a strict replay with ``network="block"`` that does not go live
        after a fork (``then="live"``)."""
        return (
            self.network == NetworkPolicy.BLOCK
            and self.record_mode == RecordMode.NONE
            and self.then_policy != Then.LIVE
        )

    @property
    def declared(self) -> Mapping[str, SideEffect]:
        """``declare`` with ``SideEffect`` values."""
        return cast(Mapping[str, SideEffect], self.declare)

    @property
    def stubbed(self) -> frozenset[str]:
        """The tools named in ``stub``, as a set."""
        return cast(frozenset[str], self.stub)

    @property
    def max_age_seconds(self) -> float | None:
        """``max_age`` in seconds (it is normalised to seconds when the options are made)."""
        value = self.max_age
        return value.total_seconds() if isinstance(value, _dt.timedelta) else value

    def with_project(self, project: ProjectSettings) -> ReplayOptions:
        """These options with the project's ``[tool.otel-agent-replay]`` defaults under them."""
        changes: dict[str, Any] = {}
        if self.allow_hosts is None and project.allow_hosts is not None:
            changes["allow_hosts"] = project.allow_hosts
        if project.stub:
            changes["stub"] = self.stubbed | set(project.stub)
        if project.key_ignore:
            merged = {tool: tuple(paths) for tool, paths in project.key_ignore.items()}
            for tool, paths in self.key_ignore.items():
                merged[tool] = merged.get(tool, ()) + tuple(paths)
            changes["key_ignore"] = merged
        return self.replace(**changes) if changes else self

    def replace(self, **changes: Any) -> ReplayOptions:
        """A copy with some fields changed (checked like the original): only the changed fields are checked
        and normalised again, the others are already (a replay's start makes one copy per test)."""
        if any(name not in NORMALISE for name in changes):
            return dataclasses.replace(self, **changes)  # a subclass's own field, or a name no field has (TypeError)
        if not changes:
            return self
        copied = copy.copy(self)
        put = object.__setattr__  # normalising in a frozen dataclass
        for name, value in changes.items():
            put(copied, name, value)
        for name in changes:
            NORMALISE[name](copied)
        return copied

    def records(self, tape_exists: bool) -> bool:
        """Whether a replay with these options records instead of replaying."""
        mode = self.record_mode
        return mode == RecordMode.ALL or (mode == RecordMode.ONCE and not tape_exists)
