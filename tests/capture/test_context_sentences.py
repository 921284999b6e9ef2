"""Issue 30, item 7: credential context in sentences and header lines, and the names that stay data.

Every value is generated here. Each secret is asserted absent from what redaction gives back and its
kind reported by ``secret_kinds`` (not the replacement's text, which is the stand-ins' business); the
data beside it, and the names that say a key is data, are asserted unchanged.
"""

from __future__ import annotations

import base64
import secrets

import orjson
import pytest

from otel_agent_replay.capture import DEFAULT_REDACTOR, KEY_PLACEHOLDER


def _word() -> str:
    return "w" + secrets.token_hex(6)


def _both(text: str) -> list[str]:
    """``text`` as the walk redacts it and as the one pass redacts it in a JSON document."""
    walked = DEFAULT_REDACTOR(text)
    assert isinstance(walked, str)
    onepass = orjson.loads(DEFAULT_REDACTOR.redact_json(orjson.dumps({"v": text}).decode()))["v"]
    return [walked, onepass]


@pytest.mark.parametrize(
    ("template", "kind"),
    [
        ("it sent Basic {b64} to the proxy", "credential"),
        ("retried with basic {b64}, then gave up", "credential"),
        ("Ocp-Apim-Subscription-Key: {secret}", "credential"),
        ("X-Partner-Key: {secret}\nAccept: */*", "credential"),
        ("X-Upstream-Token: {secret}", "credential"),
        ("Settings(signing_key='{secret}', debug=True)", "credential"),
        ("jwt:\n  signing_key: {secret}\n  ttl: 3600", "credential"),
        ("crypto:\n  encryptionKey: {secret}", "credential"),
        ("[license]\nlicense_key = {secret}\nseats = 5", "credential"),
    ],
)
def test_a_credential_named_in_a_sentence_or_header_line_is_removed(template: str, kind: str) -> None:
    secret = _word() + "-" + _word()
    b64 = base64.b64encode(f"deploy:{secret}".encode()).decode()
    text = template.format(secret=secret, b64=b64)
    for out in _both(text):
        assert secret not in out and b64 not in out, out
    assert kind in DEFAULT_REDACTOR.secret_kinds(text)


@pytest.mark.parametrize(
    "make",
    [
        lambda: "sb" + "_secret_" + secrets.token_urlsafe(24),
        lambda: "1/" + str(secrets.randbelow(10**15) + 10**15) + ":" + secrets.token_hex(16),
        lambda: "2/" + str(secrets.randbelow(10**15) + 10**15) + "/" + str(10**15) + ":" + secrets.token_hex(16),
        lambda: "fc" + "-" + secrets.token_hex(16),
        lambda: ".".join(
            [
                base64.urlsafe_b64encode(b'{"alg":"RSA-OAEP","enc":"A256GCM"}').decode().rstrip("="),
                secrets.token_urlsafe(128),
                secrets.token_urlsafe(12),
                secrets.token_urlsafe(40),
                secrets.token_urlsafe(16),
            ]
        ),
    ],
    ids=["supabase", "asana-v1", "asana-v2", "firecrawl", "jwe"],
)
def test_formats_with_no_credential_word_are_removed_by_their_prefix(make: object) -> None:
    assert callable(make)
    secret = make()
    text = f"the client was built with {secret} today"
    for out in _both(text):
        assert secret not in out and "the client was built with" in out and out.endswith(" today"), out
    assert DEFAULT_REDACTOR.secret_kinds(text) not in ((), ("secret",))


def test_a_key_header_is_redacted_whole_for_http_capture() -> None:
    for name in ("Ocp-Apim-Subscription-Key", "X-Partner-Key", "X-Upstream-Token"):
        assert DEFAULT_REDACTOR.redact_header(name, _word()) == KEY_PLACEHOLDER, name


@pytest.mark.parametrize(
    "text",
    [
        "Basic usage: call the API with a query",
        "Basic English has 850 words",
        "Basic QUJDREVGR0g= is no credential",  # base64 of text with no ':'
        "sort_key: created_at",
        "cache_key = orders-by-region",
        "routing_key: orders.created",
        "public_key: ssh-ed25519",
        "Idempotency-Key: {word}",
        "Sec-WebSocket-Key: {word}",
        "next_page_token: {word}",
        "s3_key: reports/{word}.csv",
        "max_token: 4096",
    ],
)
def test_names_that_say_a_key_is_data_and_prose_about_basic_are_kept(text: str) -> None:
    text = text.format(word=_word())
    assert _both(text) == [text, text]
    assert DEFAULT_REDACTOR.secret_kinds(text) == ()


def test_data_key_headers_are_kept_for_http_capture() -> None:
    for name in ("Idempotency-Key", "Sec-WebSocket-Key"):
        value = _word()
        assert DEFAULT_REDACTOR.redact_header(name, value) == value, name
