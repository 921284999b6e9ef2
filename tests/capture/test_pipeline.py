"""The capture pipeline: canonical redacted arguments, results given back as they were."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import orjson

from otel_agent_replay.capture import (
    DEFAULT_CAPTURE,
    DEFAULT_REDACTOR,
    BlobStore,
    Capture,
    Limits,
    Redactor,
    capture_args,
    capture_json,
    capture_result,
    messages_json,
    usage_tokens,
)
from otel_agent_replay.capture._pipeline import _no_long_string


def test_arguments_are_canonical_redacted_and_keyed() -> None:
    a = capture_args("login", {"user": " ann ", "password": "pw-1", "opts": None}, DEFAULT_CAPTURE)
    b = capture_args("login", {"password": "pw-2", "user": "ann"}, DEFAULT_CAPTURE)
    assert a.json == '{"password":"[REDACTED]","user":"ann"}'
    assert a.call_key == b.call_key and a.call_key.startswith("login:")


def test_results_keep_their_shape_but_lose_secrets() -> None:
    got = capture_result({"b": " padded ", "a": None, "token": "t-1"}, DEFAULT_CAPTURE)
    assert orjson.loads(got.json) == {"b": " padded ", "a": None, "token": "[REDACTED]"}
    assert got.truncated is False and got.sha256 is None


@dataclasses.dataclass
class Row:
    id: int
    name: str


def test_fast_and_walked_paths_give_the_same_text() -> None:
    value = {"rows": [Row(1, "a"), Row(2, "b")], "note": "clean"}
    fast = capture_json(value, DEFAULT_CAPTURE)
    walked = orjson.dumps(DEFAULT_REDACTOR(orjson.loads(fast))).decode()
    assert fast == walked
    # A user processor forces the walk; the result is the same text when it changes nothing.
    slow = capture_json(value, Capture(redactor=Redactor(processors=(lambda v: v,))))
    assert slow == fast


def test_shortened_results_are_hashed_and_stored(tmp_path: Path) -> None:
    capture = Capture(limits=Limits(max_string=32, max_result_bytes=4096), blobs=BlobStore(tmp_path))
    got = capture_result({"text": "x" * 100}, capture)
    assert got.truncated and got.sha256 is not None
    assert (tmp_path / f"{got.sha256}.json").read_text() == '{"text":"' + "x" * 100 + '"}'
    assert "truncated 100 chars" in orjson.loads(got.json)["text"]


def test_usage_and_messages() -> None:
    assert usage_tokens({"usage": {"input_tokens": 3, "output_tokens": 4}}) == (3, 4)
    assert usage_tokens({"usage": {"prompt_tokens": 5, "completion_tokens": 6}}) == (5, 6)
    assert usage_tokens({"usage": {"input_tokens": True}}) == (None, None)
    assert usage_tokens("no usage") == (None, None)
    assert messages_json({"messages": [{"role": "user"}]}) == '[{"role":"user"}]'
    assert messages_json({"text": "x"}) is None


def test_short_arguments_captured_again_are_redacted_the_same_and_processors_run_each_time() -> None:
    args = {"query": {"q": "refund", "token": "sk-live-0123456789abcdefghijklmnop"}}
    first = capture_args("GET api.example.com/search", args, DEFAULT_CAPTURE)
    again = capture_args("GET api.example.com/search", args, DEFAULT_CAPTURE)
    assert first == again and "sk-live" not in again.json and "[REDACTED" in again.json
    clean = capture_args("GET api.example.com/search", {"query": {"q": "refund"}}, DEFAULT_CAPTURE)
    assert capture_args("GET api.example.com/search", {"query": {"q": "refund"}}, DEFAULT_CAPTURE) == clean
    seen: list[object] = []

    def count(value: object) -> object:
        seen.append(value)
        return value

    counted = Capture(redactor=Redactor(processors=(count,)))
    for _ in range(3):
        capture_args("GET api.example.com/search", {"query": {"q": "refund"}}, counted)
    assert len(seen) == 3  # user code is asked every time, never answered from memory


def test_the_long_string_check_decides_as_splitting_the_text() -> None:
    """``_no_long_string`` looks at windows of the text instead of splitting it: the same answer as the split,
    on generated JSON with strings just under, at and over the limit, anywhere in the text."""
    rng = random.Random(30)
    limit = 64
    for _ in range(400):
        value = [
            "x" * rng.choice((0, 1, limit // 2, limit - 1, limit, limit + 1, 2 * limit + 3))
            + rng.choice(("", ' "q" ', "é"))
            for _ in range(rng.randint(1, 12))
        ]
        text = orjson.dumps(value).decode()
        split = '\\"' not in text and max(map(len, text.split('"'))) <= limit
        assert _no_long_string(text, limit) == split, text
