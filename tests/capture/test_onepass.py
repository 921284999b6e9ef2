"""The one pass over a document's serialised text agrees with the walk, never needs it on clean data, and keeps
the text valid JSON with every other byte the serialiser's own."""

from __future__ import annotations

import base64
import random
import sys
from pathlib import Path

import orjson
import pytest
from helpers.secret_corpus import CORPUS
from helpers.secrets import SECRETS, realistic_value
from kingfisher_sdk import Scanner

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.capture import _onepass as onepass
from otel_agent_replay.capture._describe import plain_json_names
from otel_agent_replay.capture._detector import DETECTOR
from otel_agent_replay.capture._jsontext import escaped, json_inside
from otel_agent_replay.capture._onepass import redact_json

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import redact_corpus

COMPILED = DEFAULT_REDACTOR._compiled


def _walked(value: object) -> str:
    return orjson.dumps(DEFAULT_REDACTOR(value)).decode()


@pytest.mark.parametrize("name", list(redact_corpus.SHAPES))
def test_the_bench_corpus_is_clean_and_decided_in_one_pass(name: str) -> None:
    value = redact_corpus.shapes(20_000)[name]
    text = orjson.dumps(value).decode()
    out = redact_json(COMPILED, text, plain_json_names(value))
    assert out is text, name  # no walk needed, nothing redacted: the same object
    assert _walked(value) == text


def _placed(secret: str, seed: int) -> object:
    rng = random.Random(seed)
    filler = [{"id": f"ord_{n}", "ref": f"{rng.getrandbits(128):032x}", "note": "shipped on monday"} for n in range(5)]
    where = rng.randint(0, 3)
    if where == 0:
        filler[2]["note"] = f"see {secret} here"
    elif where == 1:
        filler.append({"log": f"line one\nline two {secret}\tend"})
    elif where == 2:
        filler.append({"text": f'café "quoted" {secret} ünïcode'})
    else:
        filler.append([f"{secret}", 3, None, True])
    return {"rows": filler}


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_every_corpus_secret_goes_in_one_pass_as_in_the_walk(index: int) -> None:
    sample = CORPUS[index]
    value = _placed(sample.text, index)
    text = orjson.dumps(value).decode()
    out = redact_json(COMPILED, text, plain_json_names(value))
    if out is None:  # the structure was needed: the walk decides (the caller's path)
        out = _walked(value)
    assert orjson.loads(out) is not None  # valid JSON
    assert sample.secret not in out and orjson.dumps(sample.secret)[1:-1].decode() not in out
    assert out == _walked(value)


@pytest.mark.parametrize("secret", SECRETS[:40])
def test_the_older_secrets_go_in_one_pass_as_in_the_walk(secret: str) -> None:
    value = _placed(secret, len(secret))
    text = orjson.dumps(value).decode()
    out = redact_json(COMPILED, text, plain_json_names(value)) or _walked(value)
    assert out == _walked(value)


def test_a_value_that_needs_its_structure_is_left_to_the_walk() -> None:
    value = realistic_value()
    text = orjson.dumps(value).decode()
    assert redact_json(COMPILED, text, plain_json_names(value)) is None  # secret key names in it
    assert redact_json(COMPILED, orjson.dumps({"r": orjson.dumps({"a": 1}).decode()}).decode()) is None


def _older_json_inside(text: str, at: int) -> bool:
    """``_json_inside`` before its prefilter on the string's last character (the reference it must agree with)."""
    end = text.find('"', at + 1)
    while end > 0 and text[end - 1] == "\\" and escaped(text, end - 1):
        end = text.find('"', end + 1)
    try:
        orjson.loads(orjson.loads(text[at : end + 1]))
    except (orjson.JSONDecodeError, TypeError):
        return False
    return True


def test_the_json_inside_a_string_prefilter_decides_as_the_parse() -> None:
    rng = random.Random(30)
    inner = [
        orjson.dumps({"a": [1, 2], "b": "x"}).decode(),
        orjson.dumps([{"k": None}]).decode(),
        "[server]\nhost = 0.0.0.0",
        "[1, 2]\n",
        "[1, 2] \t\r\n ",
        '{"a": 1}\u000b',
        "[]",
        "{}",
        "[1, 2]]",
        "[not json}",
        "{broken",
    ]
    for _ in range(300):
        piece = rng.choice(inner)
        cut = piece[: rng.randint(1, len(piece))] if rng.random() < 0.3 else piece
        tail = rng.choice(["", " ", "\n", "\t", "\r", "\\", '"', "\x01", "n", "]", "}"])
        value = {"before": "x", "s": cut + tail, "after": [1]}
        text = orjson.dumps(value).decode()
        at = text.index('"s":') + 4
        if text[at + 1] not in "{[":
            continue
        assert json_inside(text, at) == _older_json_inside(text, at), repr(cut + tail)


def test_the_detector_finds_in_the_text_what_it_found_with_its_own_base64_decoding() -> None:
    """The scanner runs without Kingfisher's base64 decoding: what that decoding finds is reported decoded, never
    a substring of the text, so the tokens to remove are the same (capture decodes base64 of text itself)."""
    with_base64 = Scanner()
    for index, sample in enumerate(CORPUS):
        encoded = base64.b64encode(sample.text.encode()).decode()
        for text in (sample.text, orjson.dumps(_placed(sample.text, index)).decode(), f"{sample.text} {encoded}"):
            found = {f.secret for f in with_base64.scan(text)}
            kept = sorted((s for s in found if isinstance(s, str) and len(s) >= 8 and s in text), key=len, reverse=True)
            assert set(DETECTOR.known_tokens(text)) == set(kept), sample.name


_NAME_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_WORD_BYTES = frozenset(word.encode("ascii") for word in onepass._WORDS)


def _inert_word(data: bytes, start: int, end: int) -> bool:
    """The rule as first written, byte by byte: a credential word whose name runs into ``+``, ``/`` or ``}``, or on
    for 64 name characters, gates nothing (the direct search asks it of RE2 instead)."""
    if data[start:end].lower() not in _WORD_BYTES:
        return False
    tail = data[end : end + 64]
    rest = tail.translate(None, _NAME_BYTES)
    return rest[:1] in b"+/}" if rest else len(tail) == 64


def _gate_texts(rng: random.Random) -> list[str]:
    texts = [orjson.dumps(value).decode() for value in redact_corpus.shapes(20_000).values()]
    texts += [orjson.dumps(_placed(sample.text, index)).decode() for index, sample in enumerate(CORPUS)]
    texts += ["", "key", 'x"{"', "PASSWORD: ${PASSWORD}\n" * 40, "a/" + "k" * 61 + "key:x", "key" + "_" * 70 + ":"]
    pieces = ["key", "PASS", "Token", "_", "-", ".", "x", "9", "+", "/", "}", ":", "=", " ", '"', "\\n", "${", "sk-"]
    for _ in range(300):  # names of every length around the 64-character window, then every kind of end
        texts.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) + "k" * rng.choice((0, 50, 62)))
    return texts


def test_the_gate_finds_with_re2s_own_search_what_the_bindings_finditer_finds() -> None:
    """RE2's direct search with the inert-word rule in the regex finds every hit the binding's ``finditer`` finds
    but inert words; a later word of the same name may be left out (the name's first word already marks its line)."""
    hits = 0
    for text in _gate_texts(random.Random(30)):
        if not text.isascii():
            continue
        data = text.encode("ascii")
        matches = [match.span() for match in onepass._GATE_BYTES.finditer(data)]
        expected = [start for start, end in matches if not _inert_word(data, start, end)]
        starts = onepass._gate_starts(text, data)
        for start in expected:
            if start in starts:
                continue
            earlier = [at for at in starts if at < start and not data[at:start].translate(None, _NAME_BYTES)]
            assert earlier, (text, start)  # in the name of a word found before it, so on its line
        for start in starts:  # and no word the rule calls inert
            word = next((w for w in onepass._WORDS if data[start : start + len(w)].lower() == w.encode()), None)
            assert word is None or not _inert_word(data, start, start + len(word)), (text, start)
        hits += len(expected)
    assert onepass._GATE_MATCH is not None and hits > 100  # the direct search was the one tried, on many hits


@pytest.mark.parametrize(
    "text",
    [
        "env:\n  DATABASE_PASSWORD: ${DATABASE_PASSWORD}\n  X-Api-Key: ${API_KEY}\n",
        "curl -H 'Authorization: ${TOKEN}' https://api.example.com/v1?token=${T}&key=abc123def",
        "iVBORw0KGgoAAAANSUhEUgKEY+PWDx/Sig0" * 3 + " password: hunter2horse",
        "aGVsbG8KEYpass/" * 8 + "token=ghp_" + "A1b2C3d4E5" * 3 + "abcdef",
        "x/KEYeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "a/" + "k" * 70 + "key" + "k" * 70 + "=secretvalue123",
    ],
)
def test_an_inert_credential_word_changes_nothing_the_walk_would_redact(text: str) -> None:
    value = {"data": text, "more": [text, {"note": text}]}
    dumped = orjson.dumps(value).decode()
    out = redact_json(COMPILED, dumped, plain_json_names(value))
    assert out is None or out == _walked(value)
