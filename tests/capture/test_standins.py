"""Stand-ins (issue 30, item 2): the same length and classes, the vendor prefix kept, one per value in a tape,
nothing learnable (a per-tape key), a visible mark and no valid checksum. Values are generated here."""

from __future__ import annotations

import random
import re
import string

import pytest
from helpers.secret_corpus import ALL_SAMPLES
from helpers.token_checksum import crc_base62

from otel_agent_replay.capture import DEFAULT_REDACTOR, StandIns, StandInTable

_rng = random.Random(30)
_ALNUM = string.ascii_letters + string.digits


def _pick(alphabet: str, n: int) -> str:
    while True:
        out = "".join(_rng.choice(alphabet) for _ in range(n))
        if all(any(c in out for c in cls) for cls in (string.ascii_uppercase, string.ascii_lowercase, string.digits)
               if any(c in alphabet for c in cls)):  # fmt: skip
            return out


def _github_token() -> str:
    """A GitHub token whose checksum is valid: 30 characters, then the base62 CRC32 of what comes before."""
    head = "ghp_" + _pick(_ALNUM, 30)
    return head + crc_base62(head)


def _vendor_tokens() -> list[tuple[str, str]]:
    return [
        ("ghp_", _github_token()),
        ("sk-proj-", "sk-proj-" + _pick(_ALNUM + "-_", 120)),
        ("xoxb-", f"xoxb-{_rng.randrange(10**11, 10**12)}-{_rng.randrange(10**11, 10**12)}-{_pick(_ALNUM, 24)}"),
        ("AKIA", "AKIA" + _pick(string.ascii_uppercase + "234567", 16)),
        ("sb_secret_", "sb_secret_" + _pick(_ALNUM + "_-", 31)),
        ("sk_live_", "sk_live_" + _pick(_ALNUM, 99)),
    ]


def _classes(text: str) -> set[str]:
    return {name for name, cls in (("U", string.ascii_uppercase), ("L", string.ascii_lowercase),
                                   ("D", string.digits)) if any(c in cls for c in text)}  # fmt: skip


VENDOR = [_vendor_tokens() for _ in range(5)]


@pytest.mark.parametrize("prefix,secret", [pair for batch in VENDOR for pair in batch])
def test_a_vendor_token_keeps_its_length_classes_and_prefix_and_carries_a_mark(prefix: str, secret: str) -> None:
    stand_in = StandIns().replacement("known_token", secret)
    assert len(stand_in) == len(secret) and stand_in.startswith(prefix) and stand_in != secret
    assert _classes(stand_in) == _classes(secret)
    # every separator of a segmented format where it was (a validator's regex still holds)
    if prefix == "xoxb-":
        assert re.fullmatch(r"xoxb-[0-9]{12}-[0-9]{12}-[A-Za-z0-9]{24}", stand_in)
    assert re.search(r"(X|x|0)\1{7}", stand_in), "a run of one character marks it as a stand-in"
    body = secret[len(prefix) :]
    assert not any(body[i : i + 8] in stand_in for i in range(len(body) - 7)), "nothing of the secret is kept"


def test_a_github_stand_in_never_passes_the_checksum() -> None:
    for _ in range(200):
        token = _github_token()
        assert crc_base62(token[:-6]) == token[-6:]  # the input is a well-formed token
        stand_in = StandIns().replacement("github_token", token)
        assert crc_base62(stand_in[:-6]) != stand_in[-6:]
        assert crc_base62(stand_in[4:-6]) != stand_in[-6:], "nor without the prefix, as other checkers read it"


@pytest.mark.parametrize("sample", ALL_SAMPLES, ids=[s.name for s in ALL_SAMPLES])
def test_every_corpus_secret_gets_a_stand_in_of_its_length_and_no_new_class(sample: object) -> None:
    secret = sample.secret  # type: ignore[attr-defined]
    stand_ins = StandIns()
    stand_in = stand_ins.replacement("secret", secret)
    assert len(stand_in) == len(secret) or stand_in == "[REDACTED]"
    assert _classes(stand_in) <= _classes(secret) | ({"D"} if _classes(secret) & {"L", "U"} == set() else set())
    assert stand_in != secret and (len(secret) < 16 or secret[4:16] not in stand_in)
    assert stand_ins.replacement("secret", secret) == stand_in, "one stand-in per value in a tape"
    assert stand_ins.replacement("secret", stand_in) == stand_in, "a stand-in stands for itself"


def test_the_same_secret_gets_another_stand_in_on_another_tape() -> None:
    """A stand-in is no function of the secret alone (no hash, salted or not): a guess cannot be checked."""
    for _, secret in VENDOR[0]:
        made = {StandIns().replacement("known_token", secret) for _ in range(20)}
        assert len(made) == 20
    short = "".join(_rng.choice(string.ascii_lowercase) for _ in range(7))  # a short password
    assert len({StandIns().replacement("secret_key", short) for _ in range(20)}) > 15


def test_markers_in_a_redacted_value_become_the_stand_ins_of_the_secrets_they_replaced() -> None:
    token, other = _github_token(), _github_token()
    value = {"note": f"use {token} then {other}", "token": token, "list": [f"x {token}"]}
    redacted = DEFAULT_REDACTOR(value)
    assert token not in str(redacted)
    stand_ins = StandIns()
    made: dict[str, str] = {}
    shown = stand_ins.value(value, redacted, made)
    assert isinstance(shown, dict)
    first = stand_ins.replacement("", token)
    second = stand_ins.replacement("", other)
    assert shown == {"note": f"use {first} then {second}", "token": first, "list": [f"x {first}"]}
    assert set(made) == {first, second} and all(m.startswith("[REDACTED") for m in made.values())
    # the tape's table gives the redacted form back: what call keys and check decide on
    table = StandInTable(made)
    assert DEFAULT_REDACTOR(table.restore(shown)) == redacted


def test_a_value_under_a_secret_key_that_is_not_a_string_keeps_its_marker() -> None:
    value = {"password": 123456, "api_key": {"nested": "x"}}
    redacted = DEFAULT_REDACTOR(value)
    assert StandIns().value(value, redacted) == redacted == {"password": "[REDACTED]", "api_key": "[REDACTED]"}


def test_two_secrets_of_one_tape_never_share_a_stand_in_and_each_keeps_its_own() -> None:
    # 12 digits: a marked run keeps four drawn digits, 10,000 stand-ins for 600 secrets: some draws collide
    secrets = sorted({_pick(string.digits, 12) for _ in range(600)})
    stand_ins = StandIns()
    first = [stand_ins.replacement("pin", secret) for secret in secrets]
    assert len(set(first)) == len(secrets), "two secrets got one stand-in"
    assert all(len(s) == 12 and s.isdigit() for s in first)
    assert [stand_ins.replacement("pin", secret) for secret in reversed(secrets)] == first[::-1]
