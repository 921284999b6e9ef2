"""A replay keys a call whose arguments are on the tape without the secret detector (``capture._recorded``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_AGENT = textwrap.dedent(
    """
    import random, sys, uuid
    from otel_agent_replay import agent_run, record, replay, tool
    from otel_agent_replay.capture._detector import DETECTOR

    @tool(side_effect="read_only")
    def lookup(order: str, note: str, ref: str = "") -> dict:
        return {"order": order, "note": note, "status": "shipped"}

    rng = random.Random(int(sys.argv[3]))
    orders = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(5)]
    secret = "ghp_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") for _ in range(36))

    def agent(extra: str) -> list[dict]:
        with agent_run("orders"):
            out = [lookup(order=o, note=f"customer asked about the delivery of {o}") for o in orders]
            if sys.argv[4] == "secret":
                out.append(lookup(order=orders[0], note="with a credential", ref=f"the key {secret}{extra}"))
            return out

    if sys.argv[2] == "record":
        with record(sys.argv[1]):
            agent("")
    else:
        with replay(sys.argv[1]) as session:
            agent("")
        print("built" if DETECTOR._scanner is not None else "not built")
    """
)


def _run(script: Path, tape: Path, what: str, seed: int, secret: str = "") -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(script), str(tape), what, str(seed), secret or "none"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("seed", [1, 2])
def test_a_replay_whose_calls_are_on_the_tape_never_builds_the_detector(tmp_path: Path, seed: int) -> None:
    script = tmp_path / "agent.py"
    script.write_text(_AGENT)
    tape = tmp_path / "orders.jsonl"
    _run(script, tape, "record", seed)
    # every call replays, strictly, and the replaying process never built the detector
    assert _run(script, tape, "replay", seed) == "not built"


def test_a_live_secret_is_still_redacted_to_key_its_call(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(_AGENT)
    tape = tmp_path / "orders.jsonl"
    _run(script, tape, "record", 3, "secret")
    text = tape.read_text()
    secret_line = [line for line in text.splitlines() if "with a credential" in line]
    assert secret_line and "agent_replay.stand_ins" in secret_line[0]  # the secret went on the tape as a stand-in
    # the live call holds the real secret, which is not the tape's text: it takes the detector's path, and its
    # redacted key is the recorded one, so the strict replay passes
    assert _run(script, tape, "replay", 3, "secret") == "built"


def test_the_recorded_argument_texts_are_made_once_per_loaded_tape_not_per_session(tmp_path: Path) -> None:
    from otel_agent_replay import agent_run, load_tape, record, replay, tool

    @tool(side_effect="read_only")
    def lookup(order: str) -> dict[str, str]:
        return {"order": order, "status": "shipped"}

    orders = [f"o-{n}" for n in range(30)]
    path = tmp_path / "orders.jsonl"
    with record(path), agent_run("orders"):
        for order in orders:
            lookup(order=order)
    tape = load_tape(path)
    assert tape.derived == {}  # a loaded tape that no replay has asked of holds nothing derived
    made = []
    for _ in range(3):  # session after session (a suite's tests, repetitions) replays the same loaded tape
        with replay(tape), agent_run("orders"):
            assert [lookup(order=order)["order"] for order in orders] == orders
        made.append(tape.derived["recorded_args"])
    assert all(texts is made[0] for texts in made)  # one set, made by the first session's first call
    assert len(made[0]) == len(orders)
    assert all(any(f'"{order}"' in text for text in made[0]) for order in orders)
    again = load_tape(path)  # another load is another tape: its own set, equal in content
    with replay(again, allow_unused=True), agent_run("orders"):
        lookup(order=orders[0])
    assert again.derived["recorded_args"] == made[0] and again.derived["recorded_args"] is not made[0]
    assert tape == again  # what is derived takes no part in a tape's equality
