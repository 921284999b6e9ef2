"""Tests for otel_agent_replay.redact_rules: the invariants the string scan relies on.

Behaviour as seen through ``Redactor`` is in test_redact.py; these check the compiled
rules themselves (gates, key words, how user patterns are placed).
"""

from __future__ import annotations

import itertools
import re

import pytest
from helpers.secrets import PATTERN_SAMPLES

from otel_agent_replay.capture._redact_rules import (
    MAX_ANCHOR_OFFSET,
    PATTERN_NAMES,
    CompiledRules,
    compile_rules,
    pattern_placeholder,
)
from otel_agent_replay.core import ConfigurationError

DEFAULTS = compile_rules((), (), defaults=True)

# Key spellings built from these words cover the default rules and their exceptions.
KEY_WORDS = ["api", "key", "access", "token", "tokens", "session", "id", "auth", "basic", "set", "cookie", "max"]
KEY_WORDS += ["count", "pass", "word", "password", "secret", "private", "jwt", "creds", "refresh", "user", "x"]


def spellings(words: tuple[str, ...]) -> list[str]:
    return ["_".join(words), "-".join(w.capitalize() for w in words), words[0] + "".join(w.title() for w in words[1:])]


def test_placeholders_and_names() -> None:
    assert pattern_placeholder("jwt") == "[REDACTED:jwt]"
    assert len(set(PATTERN_NAMES)) == len(PATTERN_NAMES)
    assert DEFAULTS.full is not None and DEFAULTS.fields is not None
    groups = {*DEFAULTS.full.groupindex, *DEFAULTS.fields.groupindex}
    assert set(DEFAULTS.placeholders) == groups
    # a rule with two shapes has two groups, one placeholder: "secret_field" and "secret_field_f2"
    assert {DEFAULTS.placeholders[g] for g in groups} == {pattern_placeholder(name) for name in PATTERN_NAMES}
    for group in DEFAULTS.fields.groupindex:
        name = group.rsplit("_f", 1)[0] if group[-1].isdigit() else group
        assert DEFAULTS.placeholders[group] == pattern_placeholder(name)
    assert all(DEFAULTS.placeholders[name] == pattern_placeholder(name) for name in DEFAULTS.full.groupindex)


@pytest.mark.parametrize(("name", "text", "secret"), PATTERN_SAMPLES)
def test_every_match_has_a_gate_anchor_close_to_its_start(name: str, text: str, secret: str) -> None:
    assert DEFAULTS.full is not None and DEFAULTS.gate is not None
    matches = [m for m in DEFAULTS.full.finditer(text) if m.end() > m.start()]
    assert [m.lastgroup for m in matches] == [name]
    match = matches[0]
    anchor = DEFAULTS.gate.search(text, match.start())
    assert anchor is not None and anchor.start() - match.start() <= MAX_ANCHOR_OFFSET
    # ...and the guard of some prefilter is in the text and lets it through.
    assert any(guard in text and gate.search(text) for guard, gate in DEFAULTS.prefilters)


def test_prefilter_guards_are_single_characters() -> None:
    guards = [guard for guard, _ in DEFAULTS.prefilters]
    assert len(guards) == len(set(guards))
    assert all(len(guard) == 1 for guard in guards)
    assert DEFAULTS.min_len == 5 and DEFAULTS.separate == ()


def test_every_secret_key_contains_a_key_word() -> None:
    secret = 0
    for size in (1, 2, 3):
        for words in itertools.product(KEY_WORDS, repeat=size):
            for key in spellings(words):
                if DEFAULTS.decide(key):
                    secret += 1
                    assert any(word in key.lower() for word in DEFAULTS.key_words), key
    assert secret > 1000


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("accessToken", True),
        ("token_count", False),
        ("session", True),
        ("session_count", False),
        ("sessionid_count", True),  # a secret word wins over a count word
        ("proxy_auth", True),
        ("author", False),
        ("", False),
        ("__", False),
    ],
)
def test_default_key_decision(key: str, expected: bool) -> None:
    assert DEFAULTS.decide(key) is expected


def test_user_keys_match_exactly_or_as_word_suffixes() -> None:
    rules = compile_rules(("customer_ssn", "--"), (), defaults=False)
    assert rules.decide("customerSSN") and rules.decide("old-customer-ssn") and rules.decide("--")
    assert not rules.decide("ssn") and not rules.decide("password")
    assert rules.key_words == ("ssn",)


def test_no_defaults_no_patterns_compiles_to_nothing() -> None:
    rules = compile_rules((), (), defaults=False)
    assert isinstance(rules, CompiledRules)
    assert (rules.gate, rules.full, rules.prefilters, rules.key_words) == (None, None, (), ())


def test_user_patterns_join_the_alternation_unless_they_capture() -> None:
    rules = compile_rules((), (r"\d{3}-\d{4}", re.compile(r"(a)(b)"), r"(?x) foo  # comment"), defaults=False)
    assert rules.min_len == 1  # a user pattern may match anything, even one character
    assert rules.full is not None and set(rules.full.groupindex) == {"custom_1", "custom_3"}
    assert [placeholder for _, placeholder in rules.separate] == ["[REDACTED:custom_2]"]
    for text, name in (("call 555-0100", "custom_1"), ("a foo b", "custom_3")):
        match = rules.full.search(text)
        assert match is not None and match.lastgroup == name


@pytest.mark.parametrize("bad", ["(", 3, re.compile(b"x")])
def test_bad_user_pattern_names_its_position(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="pattern #2"):
        compile_rules((), ("ok", bad), defaults=True)
