"""The choice enums: equal to their spellings, checked with a message that lists them."""

from __future__ import annotations

import orjson
import pytest

from otel_agent_replay import ConfigurationError, RecordMode, SideEffect, replay, tool
from otel_agent_replay.core import DECLARABLE_SIDE_EFFECTS, DivergenceKind, RecordModeName, choice
from otel_agent_replay.core._errors import ReplayDivergence


def test_members_are_their_spellings() -> None:
    assert RecordMode.NEW_EPISODES == "new_episodes" and str(RecordMode.NEW_EPISODES) == "new_episodes"
    assert f"{SideEffect.READ_ONLY}" == "read_only"
    assert orjson.dumps({"mode": RecordMode.ALL}) == b'{"mode":"all"}'
    assert {RecordMode.ONCE: 1}["once"] == 1  # hashes as the string


def test_the_literal_lists_every_member() -> None:
    from typing import get_args

    assert set(get_args(RecordModeName)) == {m.value for m in RecordMode}


def test_choice_parses_a_spelling_or_a_member_and_refuses_the_rest() -> None:
    assert choice(RecordMode, "once", "replay", "mode") is RecordMode.ONCE
    assert choice(RecordMode, RecordMode.ALL, "replay", "mode") is RecordMode.ALL
    with pytest.raises(ConfigurationError, match=r"replay\(mode='sometimes'\): use one of 'none', 'once'"):
        choice(RecordMode, "sometimes", "replay", "mode")
    with pytest.raises(ConfigurationError, match="use one of 'read_only', 'write', 'external'"):
        choice(SideEffect, "undeclared", "@tool", "side_effect", allowed=DECLARABLE_SIDE_EFFECTS)


def test_every_divergence_error_names_a_kind_of_the_vocabulary() -> None:
    def subclasses(cls: type) -> list[type]:
        return [c for sub in cls.__subclasses__() for c in (sub, *subclasses(sub))]

    kinds = {cls.kind for cls in subclasses(ReplayDivergence)}
    assert kinds and kinds <= {k.value for k in DivergenceKind}


def test_the_decorator_and_replay_check_their_choices(tmp_path: object) -> None:
    with pytest.raises(ConfigurationError, match=r"side_effect='delete'.*'read_only', 'write', 'external'"):
        tool(side_effect="delete")(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"replay\(models='cloud'\)"):
        replay("t.jsonl", models="cloud")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"declare=\{'send': 'maybe'\}"):
        replay("t.jsonl", declare={"send": "maybe"})  # type: ignore[dict-item]
