"""A long multi-line string is decided by its dirty lines, and comes out as the walk writes it: every corpus
secret, at any line of a configuration file or a log, in any of several files of one document."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson
import pytest
from helpers.secret_corpus import CORPUS

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.capture._describe import plain_json_names
from otel_agent_replay.capture._onepass import redact_json

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import redact_corpus

COMPILED = DEFAULT_REDACTOR._compiled


def _walked(value: object) -> str:
    return orjson.dumps(DEFAULT_REDACTOR(value)).decode()


def _files(secret: str, seed: int) -> dict[str, object]:
    """Configuration files (as the bench corpus makes them), one line of one of them holding ``secret``."""
    rng = random.Random(seed)
    files = redact_corpus.config_files(rng, 3_000)
    assert isinstance(files, dict)
    names = sorted(files["files"])
    name = rng.choice(names)
    lines = files["files"][name].split("\n")
    at = rng.randint(0, len(lines))
    shape = rng.choice(("  API_KEY: {}", "token = {}", "{}", "curl -H 'Authorization: Bearer {}' x", "note {} end"))
    lines.insert(at, shape.format(secret))
    files["files"][name] = "\n".join(lines)
    return files


def _decided(value: object) -> str:
    text = orjson.dumps(value).decode()
    out = redact_json(COMPILED, text, plain_json_names(value))
    return _walked(value) if out is None else out


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_a_secret_on_one_line_of_a_file_goes_as_in_the_walk(index: int) -> None:
    sample = CORPUS[index]
    value = _files(sample.text, index)
    out = _decided(value)
    assert sample.secret not in out and orjson.dumps(sample.secret)[1:-1].decode() not in out
    assert out == _walked(value)


def test_repeated_lines_are_decided_once_and_clean_lines_kept_byte_for_byte() -> None:
    value = redact_corpus.config_files(random.Random(7), 20_000)
    text = orjson.dumps(value).decode()
    COMPILED.line_cache.clear()
    assert redact_json(COMPILED, text, plain_json_names(value)) is text
    # every file names DATABASE_PASSWORD (a credential word): one line, decided once for all the files
    # (with the line breaks around it: a rule reads one character past a name the same way as in the whole file)
    assert list(COMPILED.line_cache) == [("\\n  DATABASE_PASSWORD: ${DATABASE_PASSWORD}\\n", True)]


def test_a_line_that_reads_past_itself_makes_the_string_decided_whole() -> None:
    body = "\n".join(f"machine host{n}.example.com" for n in range(30))
    value = {"netrc": body + "\n  login deploy\n  password Zq8vR2mW5tK9pX3n"}
    out = _decided(value)
    assert "Zq8vR2mW5tK9pX3n" not in out
    assert out == _walked(value)
