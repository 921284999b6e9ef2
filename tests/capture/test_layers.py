"""The three layers one by one: the maintained detector, credential context, high-entropy tokens; decoded
forms; streams read whole; the entry points for reports (``secret_kinds``) and HTTP capture (``redact_header``)."""

from __future__ import annotations

import base64
import hashlib
import random
import re
import uuid

import orjson
import pytest
from helpers.secret_corpus import CORPUS, IDENTIFIERS
from helpers.secrets import GITHUB_CLASSIC as GITHUB

from otel_agent_replay import Redactor
from otel_agent_replay.capture import DEFAULT_REDACTOR, KEY_PLACEHOLDER, _entropy
from otel_agent_replay.capture._detector import DETECTOR
from otel_agent_replay.capture._entropy import high_entropy_spans, is_identifier_key
from otel_agent_replay.capture._layers import may_hold, may_hold_json

redact = DEFAULT_REDACTOR.redact_text
SAMPLES = {sample.name: sample for sample in CORPUS}


def test_the_maintained_detector_names_vendor_formats_no_pattern_of_ours_knows() -> None:
    for name in ("databricks", "shopify_access", "groq", "digitalocean"):
        sample = SAMPLES[name]
        assert DETECTOR.known_tokens(sample.text) == [sample.secret], name
        assert redact(sample.text) == sample.text.replace(sample.secret, "[REDACTED:known_token]")


@pytest.mark.parametrize(
    "name",
    [s.name for s in CORPUS if s.name.startswith(("yaml", "ini", "dotenv", "django", "python", "netrc", "pgpass"))]
    + [s.name for s in CORPUS if s.name.startswith(("xml", "header", "url", "curl", "repr", "json_", "toml", "cli"))],
)
def test_credential_context_in_every_common_syntax(name: str) -> None:
    sample = SAMPLES[name]
    out = redact(sample.text)
    assert sample.secret not in out
    assert "[REDACTED" in out
    assert out == redact(out)  # idempotent: a second pass changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "max token: 5",
        "the key: it is under the mat",
        "password: null",
        "api_key = ${API_KEY}",
        "token=[REDACTED:credential]",
        "https://example.com/search?q=keys&code_page=2",
        "SessionCount = 12",
    ],
)
def test_credential_context_leaves_what_holds_nothing(text: str) -> None:
    assert "REDACTED:credential" not in redact(text).replace("token=[REDACTED:credential]", "")


def test_high_entropy_tokens_go_and_the_identifier_rules_keep_ids() -> None:
    key = "zq_" + "Qm9Xc2Lp7Rt4Vb8Nk3Fj6Hd1Gs5Wa0Ey"
    assert redact(f"the vendor's key {key} expires") == "the vendor's key [REDACTED:high_entropy] expires"
    for identifier in IDENTIFIERS:
        assert high_entropy_spans(identifier) == [], identifier
        assert redact(f"see {identifier} now") == f"see {identifier} now"
    for benign in (
        "/usr/lib/python3.11/site-packages/otel_agent_replay/capture/_entropy.py",
        "https://api.example.com/v1/customers/c_17/orders?page=2",
        "opentelemetry-exporter-otlp-proto-http==1.40.0",
        "claude-3-5-sonnet-20241022",
        "get_customer_orders_by_id_v2",
    ):
        assert high_entropy_spans(benign) == [], benign


@pytest.mark.parametrize(
    "name", ["agent-window-0a70e798", "checkout-7d9f8c6b5-x2x9q", "orders_api.canary-3f9c1e", "web-7f9c2d1a4b-q8x7z"]
)
def test_names_with_a_random_suffix_are_kept(name: str) -> None:
    assert high_entropy_spans(name) == [] and redact(f"deployed {name} today") == f"deployed {name} today"


def test_a_word_name_with_any_hex_suffix_is_kept() -> None:
    """What made a Jaeger search by service flaky: some of ``agent-window-{8 hex}`` looked like keys."""
    rng = random.Random(20)
    for _ in range(3000):
        name = f"agent-window-{rng.getrandbits(32):08x}"
        assert high_entropy_spans(name) == [], name


def test_resource_identities_are_identifier_keys_and_credentials_are_not() -> None:
    for key in ("service.name", "service.instance.id", "host.name", "k8s.pod.name", "container.id", "cloud.region"):
        assert is_identifier_key(key), key
    for key in ("process.command_args", "deploy.api_key", "vcs.token", "note"):
        assert not is_identifier_key(key), key
    uid = "Qm9Xc2Lp7Rt4Vb8Nk3Fj6Hd1Gs5Wa0Ey"
    assert DEFAULT_REDACTOR.redact_text(uid, "k8s.pod.uid") == uid
    assert DEFAULT_REDACTOR.redact_text(uid, "app.note") == "[REDACTED:high_entropy]"
    assert DEFAULT_REDACTOR.redact_attribute("service.name", f"svc {GITHUB}") == "svc [REDACTED:github_token]"


def test_a_value_under_an_identifier_key_keeps_its_high_entropy_shape() -> None:
    ksuid = "2Nq8Rt4Vb7Xc1Lm9Kd3Fj6Hs0Gw5Ya"
    assert is_identifier_key("order_id") and is_identifier_key("thumbnailB64") and not is_identifier_key("note")
    out = DEFAULT_REDACTOR({"order_id": ksuid, "note": f"order {ksuid}"})
    assert out == {"order_id": ksuid, "note": "order [REDACTED:high_entropy]"}


def test_decoded_forms_base64_json_url_encoded_and_html_escaped() -> None:
    for name in ("base64_json", "base64url_json", "url_encoded_pem", "url_encoded_param", "html_json", "html_token"):
        sample = SAMPLES[name]
        out = redact(sample.text)
        assert not any(form in out for form in sample.forms()), (name, out)
    plain = base64.b64encode(b'{"city": "Paris", "days": 3}').decode()
    assert redact(f"cursor {plain}") == f"cursor {plain}"  # base64 of clean JSON stays


def test_a_stream_is_redacted_as_its_assembled_text_and_its_chunks_stay_consistent() -> None:
    secret = SAMPLES["vault"].secret
    text = f"Here it is: {secret} - keep it safe."
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    out = DEFAULT_REDACTOR(chunks)
    assert isinstance(out, list) and len(out) == len(chunks)
    joined = "".join(str(chunk) for chunk in out)
    assert secret[5:20] not in joined and "[REDACTED" in joined
    assert joined == redact(text)  # the redacted chunks, joined, are the redacted whole
    events = [
        {"text": "data: " + orjson.dumps({"choices": [{"delta": {"content": c}}]}).decode() + "\n\n"} for c in chunks
    ]
    out_events = DEFAULT_REDACTOR({"events": events})
    assert isinstance(out_events, dict)
    deltas = [orjson.loads(e["text"][6:])["choices"][0]["delta"]["content"] for e in out_events["events"]]
    assert "".join(deltas) == redact(text)
    ids = [str(uuid.UUID(int=n)) for n in range(1, 6)]
    assert DEFAULT_REDACTOR(ids) == ids  # a list of ids is not read as one text


def test_the_gates_rule_out_clean_text_and_keys_decided_by_name() -> None:
    assert not may_hold("shipped on time to the warehouse")
    assert may_hold("password: x") and may_hold("a" * 16)
    assert not may_hold_json('{"prompt_tokens":3,"max_tokens":10}')  # keys are decided by name, not by the gate
    assert may_hold_json('{"note":"password: x"}') and may_hold_json('{"note":"token=x"}')
    digest = hashlib.sha256(b"x").hexdigest()
    assert may_hold_json(f'{{"sha":"{digest}"}}')  # a 16-character run: the layers look, and keep it
    assert DEFAULT_REDACTOR({"sha": digest}) == {"sha": digest}


def test_secret_kinds_name_what_was_found_never_the_value() -> None:
    sample = SAMPLES["groq"]
    assert DEFAULT_REDACTOR.secret_kinds(sample.text) == ("known_token",)
    assert DEFAULT_REDACTOR.secret_kinds({"password": "x1"}) == ("secret_key",)
    assert DEFAULT_REDACTOR.secret_kinds("nothing here") == ()
    assert DEFAULT_REDACTOR.secret_kinds("[REDACTED:credential]") == ()  # already redacted: nothing new


def test_redact_header_for_http_capture() -> None:
    for name in ("x-goog-api-key", "X-Amz-Security-Token", "X-Vault-Token", "X-Hub-Signature-256", "Cookie"):
        assert DEFAULT_REDACTOR.redact_header(name, "anything") == KEY_PLACEHOLDER, name
    assert DEFAULT_REDACTOR.redact_header("content-type", "application/json") == "application/json"
    token = SAMPLES["groq"].secret
    assert DEFAULT_REDACTOR.redact_header("x-debug", f"via {token}") == "via [REDACTED:known_token]"
    assert Redactor(defaults=False).redact_header("x-goog-api-key", "v") == "v"


def test_the_layers_gate_covers_every_field_rule_trigger() -> None:
    """scan_text skips the field rules when the gate finds nothing: every trigger of theirs must open it."""
    from otel_agent_replay.capture._value_patterns import FIELD_TRIGGERS

    for word in FIELD_TRIGGERS:
        assert may_hold(f"the {word.upper()} is here") and may_hold(f"x {word}")


def test_the_short_gates_substring_path_agrees_with_the_gate_regex() -> None:
    """On short text the gates answer by substring tests first: never False where the regex finds something."""
    import random

    from otel_agent_replay.capture._layers import _GATE, _JSON_GATE

    gate, json_gate = re.compile(_GATE), re.compile(_JSON_GATE)
    rng = random.Random(5)
    pieces = ["a", "Z", "9", "-", "_", ".", ":", "=", " ", '"', "%2F", "&amp;", "-u ", "5432", "key", "Token", "\\"]
    texts = [sample.text[:256] for sample in CORPUS] + [
        "".join(rng.choice(pieces) for _ in range(rng.randint(1, 60))) for _ in range(3000)
    ]
    for text in (t for t in texts if len(t) >= 5):  # shorter text holds no secret: both gates skip it
        assert may_hold(text) or gate.search(text) is None, text
        assert may_hold_json(text) or json_gate.search(text) is None, text


@pytest.mark.parametrize(
    "text",
    [
        '{"created_at":"2026-12-01T00:00:00.000000Z","response":"","done":true,"done_reason":"stop"}',
        "at 2026-12-01T10:20:30Z, 11:22:33 and 12:00:00:00 the job ran",
        '["09:00:00","10:00:00","11:00:00","12:00:00"]',
    ],
)
def test_timestamps_in_json_or_prose_are_not_a_pgpass_line(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "minted",
    [
        "toolu_01A09q90qw90lq917835lq9",
        "call_abc123DEF456ghi789JKL0",
        "chatcmpl-9xYzAbCdEfGh1234567890",
        "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    ],
)
def test_ids_that_model_apis_mint_and_agents_echo_are_kept(minted: str) -> None:
    text = f'{{"type":"tool_use","id":"x","note":"then {minted} answered"}}'
    assert redact(text) == text


def test_a_list_holding_a_longer_string_is_data_not_a_stream_of_deltas() -> None:
    value = [" ", "e3e70682-c209-4cac-629f-6fbed82c07cd", "red"]  # glued, the UUID would turn into a token
    assert DEFAULT_REDACTOR(value) == value


def test_a_segment_is_judged_by_its_classes_as_one_character_at_a_time() -> None:
    """``_segment_key_like`` counts classes with ``str.translate``; the same verdict as the loop over characters,
    on generated tokens of every alphabet the runs hold (and a few characters outside it)."""
    rng = random.Random(30)
    alphabets = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=",
        "abcdef0123456789-_",
        "abcXYZ019_-.~",
        "aA1",
        "abcdefghij0é1ü",
    ]
    verdicts = set()
    for _ in range(3000):
        alphabet = rng.choice(alphabets)
        token = "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 60)))
        expected = not (_entropy._HEX.fullmatch(token) or _entropy._NUMBERISH.fullmatch(token)) and (
            _entropy._segment_key_like_by_char(token)
        )
        assert _entropy._segment_key_like(token) == expected, token
        verdicts.add(expected)
    assert verdicts == {True, False}
