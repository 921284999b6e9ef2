"""Tests for otel_agent_replay.redact: keys, header lists, value patterns, processors, cost.

Every secret here is fake and is assembled from pieces, so this file itself does not
look like it holds credentials to a secret scanner.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import enum
import logging
import random
import re
from pathlib import Path

import orjson
import pytest
from helpers.secrets import (
    ANTHROPIC,
    AWS_KEY_ID,
    BASIC_CREDENTIALS,
    BEARER_OPAQUE,
    COOKIE_VALUE,
    DB_URL,
    FIELD_SAMPLES,
    FREE_TEXT,
    GITHUB_CLASSIC,
    GITHUB_OAUTH,
    GITLAB,
    PATTERN_SAMPLES,
    PEM,
    PEM_BODY,
    PLAIN_PASSWORD,
    QUERY_TOKEN,
    SECRETS,
    SLACK_BOT,
    assert_no_secret,
    json_forms,
    realistic_value,
)
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agent_replay.capture._canonical import call_key, dumps_canonical, normalize, to_jsonable
from otel_agent_replay.capture._describe import plain_json_names
from otel_agent_replay.capture._redact import (
    DEFAULT_REDACTOR,
    KEY_PLACEHOLDER,
    PATTERN_NAMES,
    Redactor,
    pattern_placeholder,
)
from otel_agent_replay.core import ConfigurationError, RecordingWarning
from otel_agent_replay.core import attributes as attr

# --- placeholders and value patterns ------------------------------------------------------


def test_placeholders() -> None:
    assert KEY_PLACEHOLDER == "[REDACTED]"
    assert pattern_placeholder("aws_access_key") == "[REDACTED:aws_access_key]"


@pytest.mark.parametrize(("name", "text", "secret"), PATTERN_SAMPLES)
def test_each_value_pattern_is_found_and_named(name: str, text: str, secret: str) -> None:
    out = DEFAULT_REDACTOR.redact_text(text)
    assert secret not in out
    assert pattern_placeholder(name) in out


def test_samples_cover_every_builtin_pattern() -> None:
    assert {name for name, _, _ in PATTERN_SAMPLES + FIELD_SAMPLES} == set(PATTERN_NAMES)


@pytest.mark.parametrize(("name", "text", "secret"), FIELD_SAMPLES)
def test_each_field_rule_is_found_and_named(name: str, text: str, secret: str) -> None:
    out = DEFAULT_REDACTOR.redact_text(text)
    assert secret not in out and pattern_placeholder(name) in out
    assert DEFAULT_REDACTOR.redact_text(out) == out  # idempotent


@pytest.mark.parametrize("text", FREE_TEXT)
def test_free_text_secrets_of_issue_9_are_redacted(text: str) -> None:
    out = DEFAULT_REDACTOR.redact_text(text)
    assert_no_secret(out.encode())
    assert DEFAULT_REDACTOR.redact_text(out) == out


def test_rest_of_the_string_is_kept() -> None:
    redact = DEFAULT_REDACTOR.redact_text
    assert redact(f"key {AWS_KEY_ID} end") == "key [REDACTED:aws_access_key] end"
    assert redact(f"Authorization: Bearer {BEARER_OPAQUE}") == "Authorization: Bearer [REDACTED:bearer]"
    assert redact(DB_URL) == "postgres://[REDACTED:url_credentials]@db.internal:5432/orders"
    assert redact(f"a\n{PEM}\nb") == "a\n[REDACTED:private_key]\nb"
    assert redact(f"?access_token={QUERY_TOKEN}&page=2") == "?access_token=[REDACTED:secret_param]&page=2"
    assert redact(f"{GITHUB_CLASSIC},{GITLAB}") == "[REDACTED:github_token],[REDACTED:gitlab_token]"


def test_anthropic_key_is_named_anthropic_not_openai() -> None:
    out = DEFAULT_REDACTOR.redact_text(ANTHROPIC)
    assert out == "[REDACTED:anthropic_api_key]"
    assert "openai" not in out


def test_truncated_private_key_is_redacted_to_the_end() -> None:
    truncated = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\n" + PEM_BODY[:30]
    assert DEFAULT_REDACTOR.redact_text("cat id: " + truncated) == "cat id: [REDACTED:private_key]"


@pytest.mark.parametrize(
    "text",
    [
        "Send the bearer token in the Authorization header.",
        "task-management-system-overview and risk-assessment-quarterly-report",
        "The ASIA PACIFIC region grew; see https://example.com:8080/path and mail ops@example.com",
        "max_tokens=512 temperature=0.2",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "a ghp_ prefix alone, sk- alone, xoxb- alone, eyJ alone",
        "",
        "ok",
    ],
)
def test_clean_text_is_returned_unchanged_as_the_same_object(text: str) -> None:
    assert DEFAULT_REDACTOR.redact_text(text) is text
    assert DEFAULT_REDACTOR(text) is text


# --- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "token",
        "password",
        "passwd",
        "secret",
        "api_key",
        "apikey",
        "api-key",
        "apiKey",
        "X-Api-Key",
        "OPENAI_API_KEY",
        "authorization",
        "Proxy-Authorization",
        "cookie",
        "Set-Cookie",
        "session",
        "sessionId",
        "private_key",
        "access_key",
        "AWS_SECRET_ACCESS_KEY",
        "client_secret",
        "credential",
        "credentials",
        "jwt",
        "accessToken",
        "auth_token",
        "refresh_token",
        "X-CSRF-Token",
        "accesstoken",
        "auth",
        "basic_auth",
    ],
)
def test_secret_keys(key: str) -> None:
    assert DEFAULT_REDACTOR.is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "max_tokens",
        "input_tokens",
        "output_tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "tokens",
        "cached_tokens",
        "max_completion_tokens",
        "token_count",
        "token_usage",
        "max_token",
        "session_count",
        "tokenizer",
        "author",
        "key",
        "keys",
        "monkey",
        "possession",
        "query",
        "usage",
    ],
)
def test_count_like_and_ordinary_keys_are_not_secret(key: str) -> None:
    assert not DEFAULT_REDACTOR.is_secret_key(key)


@pytest.mark.parametrize(
    "secret_value",
    ["plain", 12345, 3.5, True, {"nested": "dict"}, ["a", "list"], [[1, 2]]],
)
def test_secret_key_value_is_replaced_and_key_kept(secret_value: object) -> None:
    out = DEFAULT_REDACTOR({"outer": {"deeper": [{"accessToken": secret_value, "keep": 1}]}})
    assert out == {"outer": {"deeper": [{"accessToken": KEY_PLACEHOLDER, "keep": 1}]}}


def test_none_under_a_secret_key_stays_none() -> None:
    assert DEFAULT_REDACTOR({"api_key": None, "password": ""}) == {"api_key": None, "password": KEY_PLACEHOLDER}


def test_model_arguments_and_usage_survive() -> None:
    value = {
        "model": "gpt-4o-mini",
        "max_tokens": 256,
        "max_completion_tokens": 128,
        "temperature": 0.1,
        "messages": [{"role": "user", "content": "count the tokens in this sentence"}],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "total_tokens": 15,
            "input_tokens": 10,
            "output_tokens": 5,
            "tokens": ["count", "the"],
        },
    }
    assert DEFAULT_REDACTOR(value) == value


# --- header lists --------------------------------------------------------------------------


def test_header_pair_lists() -> None:
    headers = [
        ["Authorization", "Basic " + "dXNlcjpwYXNz"],
        ("Cookie", COOKIE_VALUE),
        ["Accept", "application/json"],
        ["X-Trace", f"leaked {GITHUB_CLASSIC}"],
        ["x-api-key", None],
    ]
    assert DEFAULT_REDACTOR({"headers": headers}) == {
        "headers": [
            ["Authorization", KEY_PLACEHOLDER],
            ["Cookie", KEY_PLACEHOLDER],
            ["Accept", "application/json"],
            ["X-Trace", "leaked [REDACTED:github_token]"],
            ["x-api-key", None],
        ]
    }


def test_name_value_and_key_value_entries() -> None:
    entries = [
        {"name": "authorization", "value": "Basic " + "dXNlcjpwYXNz"},
        {"name": "Accept", "value": "text/html"},
        {"key": "DB_PASSWORD", "value": PLAIN_PASSWORD},
        {"Key": "GithubToken", "Value": "x"},
        {"key": "max_tokens", "value": 100},
    ]
    assert DEFAULT_REDACTOR(entries) == [
        {"name": "authorization", "value": KEY_PLACEHOLDER},
        {"name": "Accept", "value": "text/html"},
        {"key": "DB_PASSWORD", "value": KEY_PLACEHOLDER},
        {"Key": "GithubToken", "Value": KEY_PLACEHOLDER},
        {"key": "max_tokens", "value": 100},
    ]


# --- the corpus -------------------------------------------------------------------------------


def test_corpus_has_enough_distinct_secrets() -> None:
    assert len(set(SECRETS)) >= 20


def test_no_secret_of_the_corpus_survives() -> None:
    value = realistic_value()
    dumped_input = orjson.dumps(value)
    assert all(any(form in dumped_input for form in json_forms(secret)) for secret in SECRETS)
    out = DEFAULT_REDACTOR(value)
    dumped = orjson.dumps(out)
    assert_no_secret(dumped)
    # keys and ordinary data are kept
    assert out["args"]["max_tokens"] == 1024
    assert out["args"]["api_key"] == KEY_PLACEHOLDER
    assert out["args"]["config"]["auth"] == KEY_PLACEHOLDER
    assert out["args"]["headers"][2] == ["Accept", "application/json"]
    assert out["result"]["usage"] == {"input_tokens": 812, "output_tokens": 96, "total_tokens": 908}
    assert out["result"]["items"][0]["env"] == {"GITHUB_TOKEN": KEY_PLACEHOLDER, "HOME": "/home/app"}
    assert out["result"]["sessionId"] == KEY_PLACEHOLDER
    assert orjson.loads(out["result"]["raw"]) == {"refresh_token": KEY_PLACEHOLDER, "expires_in": 3600}


def test_input_is_not_mutated() -> None:
    value = realistic_value()
    before = copy.deepcopy(value)
    out = DEFAULT_REDACTOR(value)
    assert value == before
    assert out is not value
    assert out["args"] is not value["args"]


def test_clean_containers_are_new_but_clean_strings_are_shared() -> None:
    text = "a long clean string " * 20
    value = {"a": [text, 1, None, 2.5, False]}
    out = DEFAULT_REDACTOR(value)
    assert out == value
    assert out is not value
    assert out["a"] is not value["a"]
    assert out["a"][0] is text


# --- determinism -----------------------------------------------------------------------------


def test_placeholders_are_deterministic_and_redaction_idempotent() -> None:
    value = realistic_value()
    first = DEFAULT_REDACTOR(value)
    assert DEFAULT_REDACTOR(realistic_value()) == first
    assert DEFAULT_REDACTOR(first) == first
    assert orjson.dumps(DEFAULT_REDACTOR(first)) == orjson.dumps(first)


def test_call_key_is_stable_whatever_the_secret() -> None:
    """Record with one key, replay with another: the redacted call keys agree."""

    def key_for(secret: str) -> str:
        args = {"repo": "acme/api", "token": secret, "url": f"https://ci:{secret}@ci.example.com/x"}
        return call_key("clone", DEFAULT_REDACTOR(normalize(to_jsonable(args))))

    assert key_for(GITHUB_CLASSIC) == key_for(GITHUB_OAUTH)
    assert key_for(GITHUB_CLASSIC) == key_for(GITHUB_CLASSIC)


# --- user keys, patterns and processors -----------------------------------------------------------


def test_user_keys_match_like_defaults() -> None:
    redactor = Redactor(keys=("customer_ssn",))
    for key in ("customer_ssn", "customerSSN", "X-Customer-Ssn", "CUSTOMER_SSN", "customerssn"):
        assert redactor.is_secret_key(key), key
    assert not redactor.is_secret_key("customer_id")
    assert redactor({"customerSsn": "123-45-6789", "password": "x"}) == {
        "customerSsn": KEY_PLACEHOLDER,
        "password": KEY_PLACEHOLDER,
    }


def test_user_patterns_are_named_custom_n() -> None:
    redactor = Redactor(
        patterns=(r"EMP-\d{6}", re.compile(r"acct_[a-z]+", re.IGNORECASE), r"(?i)ticket#\d+"),
    )
    out = redactor({"note": f"EMP-123456 paid ACCT_abc; see TICKET#42 and {AWS_KEY_ID}"})
    assert out == {
        "note": "[REDACTED:custom_1] paid [REDACTED:custom_2]; see [REDACTED:custom_3] and [REDACTED:aws_access_key]"
    }


def test_user_pattern_with_groups_and_empty_matches() -> None:
    redactor = Redactor(patterns=(r"(pin|PIN)[:=](\d{4})\b", r"x*"))
    assert redactor.redact_text("card pin=1234 ok") == "card [REDACTED:custom_1] ok"
    assert redactor.redact_text("nothing here") == "nothing here"


@pytest.mark.parametrize("bad", ["(unclosed", b"bytes", 42])
def test_invalid_user_pattern_is_a_configuration_error(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="pattern #1"):
        Redactor(patterns=(bad,))  # type: ignore[arg-type]


def test_invalid_key_or_processor_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Redactor(keys=(1,))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Redactor(processors=("not callable",))  # type: ignore[arg-type]


def test_processors_run_in_order_after_builtin_passes() -> None:
    seen: list[object] = []

    def first(data: object) -> object:
        seen.append(copy.deepcopy(data))
        assert isinstance(data, dict)
        return {**data, "first": True}

    def second(data: object) -> object:
        assert isinstance(data, dict)
        return {k: v for k, v in data.items() if k != "internal"}

    redactor = Redactor(processors=(first, second))
    value = {"password": PLAIN_PASSWORD, "internal": "drop me", "ok": 1}
    assert redactor(value) == {"password": KEY_PLACEHOLDER, "ok": 1, "first": True}
    assert seen == [{"password": KEY_PLACEHOLDER, "internal": "drop me", "ok": 1}]
    assert value == {"password": PLAIN_PASSWORD, "internal": "drop me", "ok": 1}


def test_processor_error_fails_closed_without_logging_the_message(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def broken(data: object) -> object:
        raise ValueError(f"cannot handle {PLAIN_PASSWORD}")

    def after(data: object) -> object:
        calls.append("after")
        return data

    redactor = Redactor(keys=(), processors=(broken, after), defaults=False)
    with (
        caplog.at_level(logging.WARNING, logger="otel_agent_replay.redact"),
        pytest.warns(RecordingWarning, match="broken raised ValueError") as warned,
    ):
        out = redactor({"note": PLAIN_PASSWORD})
    assert out == "[REDACTED:processor_error]"
    assert PLAIN_PASSWORD not in str(warned[0].message)
    assert calls == []
    assert "ValueError" in caplog.text
    assert PLAIN_PASSWORD not in caplog.text


def test_defaults_false_turns_the_defaults_off() -> None:
    value = {"password": PLAIN_PASSWORD, "note": f"key {AWS_KEY_ID}", "headers": [["Cookie", COOKIE_VALUE]]}
    off = Redactor(defaults=False)
    assert off(value) == value
    assert not off.is_secret_key("password")
    assert off.redact_text(AWS_KEY_ID) == AWS_KEY_ID
    mine = Redactor(keys=("cookie",), patterns=(r"AKIA[0-9A-Z]{16}",), defaults=False)
    assert mine(value) == {
        "password": PLAIN_PASSWORD,
        "note": "key [REDACTED:custom_1]",
        "headers": [["Cookie", KEY_PLACEHOLDER]],
    }


def test_redactor_is_frozen_hashable_and_compares_by_configuration() -> None:
    assert Redactor() == DEFAULT_REDACTOR
    assert hash(Redactor(keys=("a",))) == hash(Redactor(keys=("a",)))
    assert Redactor(keys=("a",)) != Redactor(keys=("b",))
    assert len({Redactor(), Redactor(), Redactor(defaults=False)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_REDACTOR.keys = ("x",)  # type: ignore[misc]


# --- odd data -----------------------------------------------------------------------------------


class Color(str, enum.Enum):
    RED = "red"


def test_odd_json_data_never_raises() -> None:
    cyclic: list[object] = [1]
    cyclic.append(cyclic)
    deep: object = GITHUB_CLASSIC
    for _ in range(300):
        deep = [deep]
    value = {
        1: "int key",
        ("tuple", "key"): "tuple key",
        "set": {3, 1, 2},
        "bytes": b"raw",
        "enum": Color.RED,
        "path": Path("/tmp/x"),
        "nan": float("nan"),
        "cyclic": cyclic,
        "deep": deep,
        "object": object(),
        "tuple": ("a", GITHUB_CLASSIC),
        "broken_json": "{not json}",
        "placeholder_like": "[REDACTED]",
    }
    out = DEFAULT_REDACTOR(value)
    assert out[1] == "int key"
    assert out["set"] == [1, 2, 3]
    assert out["bytes"] == {"$bytes": "cmF3"}
    assert out["enum"] == "red"
    assert out["path"] == "/tmp/x"
    assert out["tuple"] == ["a", "[REDACTED:github_token]"]
    assert out["broken_json"] == "{not json}"
    assert out["placeholder_like"] == "[REDACTED]"
    assert GITHUB_CLASSIC not in repr(out)


# --- cost -----------------------------------------------------------------------------------------


def clean_text(size: int = 4096) -> str:
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed"]
    words += ["eiusmod", "tempor", "incididunt", "labore", "magna", "aliqua", "veniam", "nostrud"]
    parts: list[str] = []
    i = 0
    while sum(len(part) for part in parts) < size:
        note = " ".join(words[(i + j) % len(words)] for j in range(6))
        parts.append(
            f'{{"user_id": "c_{i}", "note": "{note}", "n": {i * 7919 % 100000}, '
            f'"price": {i * 3.17:.2f}, "date": "2024-0{i % 9 + 1}-1{i % 10}"}}, '
        )
        i += 1
    return "".join(parts)[:size]


def test_clean_text_comes_back_as_the_same_object() -> None:
    """Clean text is not rebuilt (its cost is in bench/bench_redaction.py, not a timed test)."""
    text = clean_text()
    assert DEFAULT_REDACTOR.redact_text(text) is text


def test_a_secret_inside_long_text_is_found() -> None:
    text = clean_text() + f" leaked {SLACK_BOT} " + clean_text(2000)
    out = DEFAULT_REDACTOR.redact_text(text)
    assert SLACK_BOT not in out
    assert out.count("[REDACTED:slack_token]") == 1
    assert len(out) == len(text) - len(SLACK_BOT) + len("[REDACTED:slack_token]")


# --- the tape bytes ---------------------------------------------------------------------------------


def test_secret_never_reaches_the_tape_bytes(tmp_path: Path) -> None:
    """Redact before setting attributes, export the span as OTLP JSON, read the bytes back."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(attr.INSTRUMENTATION_NAME)
    value = realistic_value()

    args_json = dumps_canonical(DEFAULT_REDACTOR(normalize(to_jsonable(value["args"]))))
    result_json = orjson.dumps(DEFAULT_REDACTOR(to_jsonable(value["result"]))).decode()
    error_message = DEFAULT_REDACTOR.redact_text(f"401 for token {GITHUB_CLASSIC}")
    with tracer.start_as_current_span(attr.tool_span_name("fetch_orders")) as span:
        span.set_attribute(attr.GEN_AI_TOOL_CALL_ARGUMENTS, args_json)
        span.set_attribute(attr.CALL_KEY, call_key("fetch_orders", orjson.loads(args_json)))
        span.set_attribute(attr.GEN_AI_TOOL_CALL_RESULT, result_json)
        span.add_event(attr.EXCEPTION_EVENT, {attr.EXCEPTION_MESSAGE: error_message})
    provider.shutdown()

    tape = tmp_path / "tape.jsonl"
    tape.write_text(encode_spans(exporter.get_finished_spans()).to_json() + "\n", encoding="utf-8")
    data = tape.read_bytes()

    assert b"[REDACTED" in data
    assert attr.GEN_AI_TOOL_CALL_ARGUMENTS.encode() in data
    assert_no_secret(data)


def _pieces(value: object) -> list[object]:
    """Every sub-value of some JSON data, the whole first."""
    found: list[object] = [value]
    if isinstance(value, dict):
        for item in value.values():
            found.extend(_pieces(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_pieces(item))
    return found


def test_the_cheap_text_check_never_skips_what_the_walk_would_change() -> None:
    samples: list[object] = [*_pieces(realistic_value()), *(text for _, text, _ in PATTERN_SAMPLES)]
    samples += [{key: "value"} for key in ("accessToken", "X-Api-Key", "client_secret", "PASSWD", "jwt")]
    samples += [[["Cookie", "a=b"]], [{"name": "authorization", "value": "x"}]]
    changed = 0
    for value in samples:
        text = orjson.dumps(value).decode()
        if DEFAULT_REDACTOR(value) != value:
            changed += 1
            assert DEFAULT_REDACTOR.may_redact(text), text
            assert DEFAULT_REDACTOR.may_redact(text, plain_json_names(value)), text
    assert changed > 30


def test_the_cheap_text_check_passes_clean_data() -> None:
    clean = {"items": [{"id": i, "title": f"document {i}", "body": "lorem ipsum " * 10} for i in range(20)]}
    assert not DEFAULT_REDACTOR.may_redact(orjson.dumps(clean).decode())
    assert Redactor(processors=(lambda v: v,)).may_redact("{}")  # processors may do anything
    assert Redactor(keys=("customer_ssn",)).may_redact('{"customerSsn":"1"}')


def _random_value(rng: random.Random, depth: int = 0) -> object:
    keys = [
        "id",
        "title",
        "body",
        "apiKey",
        "x-api-key",
        "note",
        "name",
        "value",
        "Key",
        "tokens",
        "max_tokens",
        "session",
        "password_hint",
        "url",
        "headers",
        "items",
        "auth",
        "credit",
        "author",
        "monkey",
    ]
    texts = [
        "plain text",
        "Bearer " + "abc123def456ghi789",
        "see " + AWS_KEY_ID,
        '{"api_key": "k-1"}',
        '[["Authorization", "x"]]',
        "postgres://u:" + "pw12345" + "@h/db",
        "a token for you",
        "",
        "42",
    ]
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice([*texts, 3, 2.5, True, None])
    if roll < 0.7:
        return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if roll < 0.85:
        return [rng.choice(["Authorization", "Cookie", "Accept", "X-Trace", "my token"]), rng.choice(texts)]
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


@pytest.mark.parametrize("seed", range(6))
def test_the_cheap_check_never_skips_random_data_the_walk_would_change(seed: int) -> None:
    rng = random.Random(seed)
    changed = 0
    for _ in range(1500):
        value = _random_value(rng)
        if DEFAULT_REDACTOR(value) != value:
            changed += 1
            text = orjson.dumps(value).decode()
            assert DEFAULT_REDACTOR.may_redact(text), value
            assert DEFAULT_REDACTOR.may_redact(text, plain_json_names(value)), value
    assert changed > 100


def test_the_names_of_plain_json_are_its_keys_pair_names_and_header_names() -> None:
    value = {
        "orders": [{"id": 1, "note": "x"}],
        "env": [{"name": "DB_PASSWORD", "value": "s"}, {"Key": "Owner", "Value": "me"}],
        "headers": [["Cookie", "a=b"], ["not", "a", "pair"]],
    }
    assert plain_json_names(value) == {
        "orders", "id", "note", "env", "name", "value", "DB_PASSWORD", "Key", "Value", "Owner", "headers", "Cookie"
    }  # fmt: skip
    assert plain_json_names({"t": (1, 2)}) is None and plain_json_names({1: "x"}) is None
    assert plain_json_names([{1: "x"}]) is None and plain_json_names([{"a": (1,)}, {"b": 2}]) is None
    assert plain_json_names([{"a": [{"name": "token", "value": "x"}]}, {"b": {"c": 1}}]) == {
        "a",
        "name",
        "value",
        "token",
        "b",
        "c",
    }
    clean = {"orders": [{"order_id": f"o{i}", "note": "parcel shipped"} for i in range(200)]}
    text = orjson.dumps(clean).decode()
    assert not DEFAULT_REDACTOR.may_redact(text, plain_json_names(clean))  # many strings, no word scan
    assert DEFAULT_REDACTOR.may_redact(text, {"api_key"})


# --- issue 9: keys, bytes, personal data -------------------------------------------------------------


def test_a_secret_in_a_dict_key_is_redacted_with_its_value() -> None:
    value = {GITHUB_CLASSIC: "x", f"opt_{GITLAB}": 1, "plain": "kept"}
    out = DEFAULT_REDACTOR(value)
    assert out == {
        "[REDACTED:github_token]": "[REDACTED]",
        "opt_[REDACTED:gitlab_token]": "[REDACTED]",
        "plain": "kept",
    }
    assert DEFAULT_REDACTOR(out) == out


def test_bytes_are_redacted_before_encoding() -> None:
    value = to_jsonable({"body": f"Authorization: Basic {BASIC_CREDENTIALS}\n{GITHUB_CLASSIC}".encode()})
    assert DEFAULT_REDACTOR.may_redact(orjson.dumps(value).decode())
    out = DEFAULT_REDACTOR(value)
    decoded = base64.b64decode(out["body"]["$bytes"])  # type: ignore[index]
    assert decoded == b"Authorization: [REDACTED:header]\n[REDACTED:github_token]"
    binary = to_jsonable({"body": bytes(range(256))})
    assert DEFAULT_REDACTOR(binary) == binary


def test_personal_data_is_redacted_only_behind_the_switch() -> None:
    text = "mail jane.doe@example.com, card 4111 1111 1111 1111, call +1 (415) 555-0132 on 2024-01-01"
    assert DEFAULT_REDACTOR.redact_text(text) == text
    pii = Redactor(pii=True)
    out = pii.redact_text(text)
    assert out == "mail [REDACTED:email], card [REDACTED:card_number], call [REDACTED:phone] on 2024-01-01"
    # a number that fails the Luhn check, a bare id, a version and an address stay
    for kept in ("card 4111 1111 1111 1112", "order 123456789012", "v1.22.333.4444", "ip 192.168.100.200"):
        assert pii.redact_text(kept) == kept
    assert pii({"to": "a@b.example"}) == {"to": "[REDACTED:email]"} and pii.may_redact('{"n":1}')


def test_a_processor_returning_non_json_is_contained_and_named(tmp_path: Path) -> None:
    from otel_agent_replay import RecordingWarning, agent_run, load_tape, record, tool

    def to_set(value: object) -> object:
        return {1, 2} if isinstance(value, dict) else value

    @tool(side_effect="read_only")
    def lookup(x: int) -> dict[str, int]:
        return {"x": x}

    tape = tmp_path / "t.jsonl"
    warned = pytest.warns(RecordingWarning, match=r"processor .*to_set returned data that is not JSON.*step kept")
    with warned, record(tape, redactor=Redactor(processors=(to_set,))), agent_run("a", input={"q": 1}) as run:
        assert lookup(1) == {"x": 1}  # the agent goes on
        run.set_output({"done": True})
    (recorded,) = load_tape(tape).runs
    assert recorded.input == "[REDACTED:processor_error]"
    (step,) = recorded.steps
    assert step.args == "[REDACTED:processor_error]" and step.result == "[REDACTED:processor_error]"


@pytest.mark.parametrize("signal", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_from_a_processor_propagate(signal: type[BaseException]) -> None:
    def interrupted(value: object) -> object:
        raise signal()

    with pytest.raises(signal):
        Redactor(processors=(interrupted,))({"a": 1})


_MANY_NAMED = [
    ({}, False),
    ({"usage": {"prompt_tokens": 3}}, False),  # a count, not a secret
    ({"api_key": "k-1"}, True),
    ({"meta": [["Cookie", "a"]]}, True),  # a header pair
]


@pytest.mark.parametrize(("extra", "secret"), _MANY_NAMED)
def test_the_names_check_of_a_value_with_many_names_agrees_with_the_walk(
    extra: dict[str, object], secret: bool
) -> None:
    value = {**{f"user_{i}": {"name": f"n{i}", "score": i} for i in range(600)}, **extra}  # 600 names: one scan
    text = orjson.dumps(value).decode()
    assert (DEFAULT_REDACTOR(value) != value) is secret
    assert DEFAULT_REDACTOR.may_redact(text, plain_json_names(value)) is secret
