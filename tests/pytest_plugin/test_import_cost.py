"""Nothing to pay where the plugin is not used: its entry point imports no SDK module, a run whose tests
do not use it imports none either, and the SDK's modules are not assertion-rewritten."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from otel_agent_replay.core import RecordMode
from otel_agent_replay.pytest_plugin._state import RECORD_MODES

pytest_plugins = ["pytester"]

ENTRY_MODULES = [
    "otel_agent_replay",
    "otel_agent_replay.pytest_plugin",
    "otel_agent_replay.pytest_plugin._hooks",
    "otel_agent_replay.pytest_plugin._state",
]

LOAD_THE_ENTRY_POINT = """
import json, sys
from importlib.metadata import entry_points
before = set(sys.modules)
(point,) = [p for p in entry_points(group="pytest11") if p.name == "otel_agent_replay"]
plugin = point.load()
new = sorted(set(sys.modules) - before)
print(json.dumps({"module": plugin.__name__, "new": new}))
"""


def test_the_entry_point_imports_no_sdk_module_in_a_fresh_interpreter() -> None:
    done = subprocess.run([sys.executable, "-c", LOAD_THE_ENTRY_POINT], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    assert found["module"] == "otel_agent_replay.pytest_plugin"
    assert [m for m in found["new"] if m.startswith("otel_agent_replay")] == ENTRY_MODULES
    heavy = {m.split(".")[0] for m in found["new"]} & {"opentelemetry", "rich", "orjson", "otel_agent_replay_tape"}
    assert heavy == set()


REPORT_MODULES = """
import json, sys

def pytest_sessionfinish(session):
    ours = sorted(m for m in sys.modules if m.startswith("otel_agent_replay"))
    with open("modules.json", "w") as out:
        json.dump(ours, out)
"""

PLAIN_TESTS = """
def test_one():
    assert 1 + 1 == 2

def test_two():
    assert "a" * 2 == "aa"
"""

TAPE_TEST = """
def test_with_a_tape(agent_tape):
    pass
"""


def _modules_after(pytester: pytest.Pytester) -> list[str]:
    found: list[str] = json.loads((pytester.path / "modules.json").read_text())
    return found


def test_a_run_whose_tests_do_not_use_the_plugin_imports_no_sdk_module(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(REPORT_MODULES)
    pytester.makepyfile(test_plain=PLAIN_TESTS)
    result = pytester.runpytest_subprocess("--agent-record-mode=none", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert _modules_after(pytester) == ENTRY_MODULES
    # The same run with a test that asks for the fixture: now the SDK comes in (and the test fails on its
    # missing tape, as before)
    pytester.makepyfile(test_tape=TAPE_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*no tape for this test at*"])
    imported = _modules_after(pytester)
    assert "otel_agent_replay.replayer" in imported and "otel_agent_replay.pytest_plugin._plugin" in imported


MARK_LIKE_AN_INSTALLED_WHEEL = """
def pytest_addoption(parser, pluginmanager):
    # What pytest does for a distribution installed as a wheel that registers a pytest11 entry point
    # (an editable install registers no module for rewriting): mark its packages before they load.
    pluginmanager.rewrite_hook.mark_rewrite("otel_agent_replay", "helperpkg")
"""

CHECK_THE_LOADERS = """
import importlib
import sys

def _rewritten(name):
    module = importlib.import_module(name)
    return type(module.__spec__.loader).__name__ == "AssertionRewritingHook"

def test_loaders():
    assert _rewritten("helperpkg.checks")  # a marked package is rewritten: the marking works
    assert _rewritten("otel_agent_replay.pytest_plugin._hooks")  # loaded before the plugin could unmark
    assert not _rewritten("otel_agent_replay.replayer")
    assert not _rewritten("otel_agent_replay.tape._load")
"""


def test_the_sdk_s_modules_are_not_assertion_rewritten(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mark_like_a_wheel=MARK_LIKE_AN_INSTALLED_WHEEL, test_loaders=CHECK_THE_LOADERS)
    package = pytester.mkpydir("helperpkg")
    (package / "checks.py").write_text("def same(a, b):\n    assert a == b\n")
    result = pytester.runpytest_subprocess("-p", "mark_like_a_wheel", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_option_s_choices_are_the_record_modes() -> None:
    assert list(RECORD_MODES) == [mode.value for mode in RecordMode]
