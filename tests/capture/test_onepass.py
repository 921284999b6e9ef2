"""The one pass over a document's serialised text agrees with the walk, never needs it on clean data, and keeps
the text valid JSON with every other byte the serialiser's own."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson
import pytest
from helpers.secret_corpus import CORPUS
from helpers.secrets import SECRETS, realistic_value

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.capture._describe import plain_json_names
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
