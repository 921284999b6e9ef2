"""The plugin's entry point: what pytest loads in every run of a project that has the package installed.

It imports pytest and the standard library only. The SDK (the replayer, OpenTelemetry, …) is
imported by ``_plugin`` when a test asks for the ``agent_tape`` fixture or carries the
``agent_conform`` marker; a run in which no test does costs the options, the markers and three
cheap hook calls per test (see docs/design.md, "Import cost").

pytest marks every module of a distribution that registers a ``pytest11`` entry point for assertion
rewriting, which would make it compile the SDK's ~130 modules from source (on every run where
bytecode is not written) the first time a test uses a tape. The SDK's modules raise their own
errors and need no rewritten ``assert``: ``pytest_addoption`` takes the package off that list.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ._state import NOT_READY, PACKAGE, RECORD_MODES, STATE

if TYPE_CHECKING:
    from otel_agent_replay.replayer import ReplaySession


def _leave_the_package_unrewritten(pluginmanager: pytest.PytestPluginManager) -> None:
    """Unmark the package for assertion rewriting (pytest marked it as the distribution of a plugin).

    pytest has no public way to unmark a name; this reads its rewrite hook's ``_must_rewrite`` set
    and does nothing when the hook has none (``--assert=plain``, or another pytest): the modules are
    then rewritten as before, which changes their cost, not their behaviour.
    """
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked.difference_update({n for n in marked if n == PACKAGE or n.startswith(PACKAGE + ".")})
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if isinstance(cache, dict):
        for name in [n for n in cache if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del cache[name]


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    _leave_the_package_unrewritten(pluginmanager)
    group = parser.getgroup("agent-replay", "otel-agent-replay: record and replay agent runs")
    group.addoption(
        "--agent-record-mode",
        choices=list(RECORD_MODES),
        default=None,
        help="none (strict replay, the default), once (record missing tapes), new_episodes (append "
        "read-only misses), all (record every tape again)",
    )
    group.addoption(
        "--agent-tapes-dir",
        default=None,
        help="folder for tapes (default: a 'tapes' folder beside each test module)",
    )
    parser.addini("agent_record_mode", "default for --agent-record-mode", default="none")
    parser.addini("agent_tapes_dir", "default for --agent-tapes-dir", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_tape(path=None, **options): the test's tape (relative to its tapes folder) and replay() "
        "options such as stub=, allow_unused=, overrides=, fallbacks=; fail_on_live_calls=, "
        "fail_on_side_effects=, fail_on_drift=, fail_on_unused= switch the end-of-test checks; repeat=K, "
        "min_pass_rate=R run the body K times (the model live) and fail below a pass rate R; expect=E passes "
        "the test when the replay raises E (a refusal or a divergence) and fails it when it does not",
    )
    config.addinivalue_line(
        "markers",
        "agent_conform(tools, tapes=None): call each read-only tool on the tapes (default: every tape of "
        "this test module) once, live, and fail when its answer's shape differs from the fixtures'",
    )


@pytest.fixture
def agent_tape(request: pytest.FixtureRequest) -> Iterator[ReplaySession]:
    """Record or replay this test's tape (see ``--agent-record-mode``); yields the replay handle."""
    from . import _plugin

    yield from _plugin.tape_fixture(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """A replay divergence's report starts with the divergence; the traceback (SDK frames hidden) follows."""
    report = yield
    excinfo = call.excinfo
    # A ReplayDivergence can only have been raised once the SDK is imported: no import for other tests.
    core = sys.modules.get(f"{PACKAGE}.core")
    if (
        excinfo is not None
        and core is not None
        and isinstance(report, pytest.TestReport)
        and report.failed
        and excinfo.errisinstance(core.ReplayDivergence)
    ):
        where = item.repr_failure(excinfo)  # pytest's own traceback, as --tb says, SDK frames hidden
        text = f"{excinfo.typename}: {excinfo.value}\n\nwhere the agent met it:\n{where}"
        headline: Any = _Headline(text, _short_crash(getattr(where, "reprcrash", None), text))
        report.longrepr = headline
    elif (
        excinfo is not None
        and isinstance(report, pytest.TestReport)
        and report.failed
        and any(name == "agent_tape_pass_rate" for name, _ in item.user_properties)
        and str(excinfo.value).startswith("pass rate ")
    ):
        # a repeat= test below its rate: the short summary is the rate, not the class (FAILED … - pass rate 2/5 …)
        crash = getattr(report.longrepr, "reprcrash", None)
        if dataclasses.is_dataclass(crash) and not isinstance(crash, type) and hasattr(crash, "message"):
            report.longrepr.reprcrash = dataclasses.replace(  # type: ignore[union-attr]
                crash, message=str(excinfo.value).split("\n", 1)[0]
            )
    return report


def _short_crash(reprcrash: Any, text: str) -> Any:
    """The crash line of the short summary as the class's own name and the message (``TapeDrift: search#2:
    drift in …``): the step id leads the message, so ``FAILED … - TapeDrift: search#2…`` fits 80 columns."""
    if not dataclasses.is_dataclass(reprcrash) or isinstance(reprcrash, type) or not hasattr(reprcrash, "message"):
        return reprcrash  # a pytest whose crash line is another shape: keep its own
    return dataclasses.replace(reprcrash, message=text.split("\n", 1)[0])


class _Headline:
    """A failure report that starts with the divergence; its ``reprcrash`` keeps the short summary's
    ``FAILED … - TapeDrift: …`` line."""

    def __init__(self, text: str, reprcrash: Any) -> None:
        self.text = text
        self.reprcrash = reprcrash

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """End the replay right after the test body; a test whose replay could not start fails instead
    of running (its body never runs live by accident)."""
    __tracebackhide__ = True
    reason = item.stash.get(NOT_READY, None)
    if reason is not None:
        pytest.fail(reason, pytrace=False)
    if STATE not in item.stash and item.get_closest_marker("agent_conform") is None:
        return (yield)  # a test of ours neither uses: nothing to import, nothing to end
    from . import _plugin

    result: Any = yield from _plugin.around_call(item)
    return result
