"""The command parses first and imports what the command needs: ``--version`` and ``--help`` almost nothing."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._entry import COMMANDS, _front_parser, build_parser
from otel_agent_replay.core import __version__

PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
from otel_agent_replay.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
print(json.dumps({"code": code, "out": out.getvalue(), "new": sorted(set(sys.modules) - before)}))
"""


def _imports_of(*argv: str) -> tuple[object, str, list[str]]:
    """Run the command in a fresh interpreter; what it printed, and the modules it imported."""
    import json

    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["code"], found["out"], found["new"]


def _ours(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith("otel_agent_replay")]


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_almost_nothing(flag: str) -> None:
    code, out, new = _imports_of(flag)
    assert code == 0
    assert (f"otel-agent-replay {__version__}" in out) if flag == "--version" else ("show" in out and "conform" in out)
    mine = {"otel_agent_replay", "otel_agent_replay.cli", "otel_agent_replay.cli._entry"}
    assert set(_ours(new)) <= mine | {"otel_agent_replay._version"}
    heavy = [m for m in new if m.split(".")[0] in {"rich", "orjson", "opentelemetry", "typing", "dataclasses"}]
    assert heavy == []
    assert len(new) < 25, new  # argparse and what it uses, our three modules


def test_a_command_imports_its_own_module_only() -> None:
    """``stats`` needs the tape loader; not the evidence store, the backends or the regression run."""
    code, _, new = _imports_of("stats", str(Path(__file__).parent / "no-such-tape.jsonl"))
    assert code == 2  # the tape is missing: the command ran and said so
    subpackages = {m.split(".")[1] for m in _ours(new) if m.count(".") >= 1}
    assert {"cli", "tape"} <= subpackages
    assert not subpackages & {"store", "backends", "regression", "replayer", "recorder", "integrations"}


def test_the_command_table_agrees_with_the_registered_commands() -> None:
    whole = build_parser()
    sub = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    registered = {action.dest: action.help for action in sub._choices_actions}
    assert list(registered) == list(COMMANDS)
    assert registered == {name: text for name, (_, text) in COMMANDS.items()}
    assert _front_parser().format_help() == whole.format_help()
    assert _front_parser().format_usage() == whole.format_usage()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: command"),
        (["nope"], "invalid choice: 'nope'"),
        (["show"], "the following arguments are required: tape"),
        (["--bogus", "show"], "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_as_before(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


@tool(side_effect="read_only")
def lookup(sku: str) -> dict[str, int]:
    return {"stock": 4}


def test_show_loads_the_price_data_only_for_a_model_step_with_tokens(tmp_path: Path) -> None:
    """``genai-prices`` (the cost extra, installed here) takes longer to load than the rest of ``show``."""
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("shop"):
        lookup("sku-1")
    code, out, new = _imports_of("show", str(tape))
    assert code == 0 and "lookup" in out
    assert "genai_prices" not in {m.split(".")[0] for m in new}
