"""Fake secrets, built from pieces so no scanner mistakes this file for a leak: the redaction corpus."""

from __future__ import annotations

import orjson

# --- fake secrets, built from pieces ----------------------------------------------------

AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_STS_KEY_ID = "ASIA" + "Y34FZKBOKMUTVV7A"
GITHUB_CLASSIC = "gh" + "p_" + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx"
GITHUB_OAUTH = "gh" + "o_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GITHUB_FINE_GRAINED = "github" + "_pat_" + "11ABCDEFG0" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7"
GITLAB = "gl" + "pat-" + "zXq8Rt2Lm9Vb4Nc7Kd1F"
OPENAI_PROJECT = "sk-" + "proj-" + "Tq3vB8xK2mN7pR4sW9yZ1cF6hJ0lA5dG" + "-Xe2Ui7Oa"
OPENAI_LEGACY = "sk-" + "Fq9Lw2Xz7Rb4Nm8Kd3Vc6Hj1Tp5Gs0Ya" + "E2Ui7Oa3Wq"
ANTHROPIC = "sk-" + "ant-" + "api03-" + "Zr8Kq2Wm5Xn9Vb3Lc7Hd1Fj4Tp6Gs0Ya" + "-AbCdEf12"
SLACK_BOT = "xox" + "b-" + "240593746512-" + "4820193847561-" + "kQz8Rt2Lm9Vb4Nc7Kd1Fx3Wy"
SLACK_USER = "xox" + "p-" + "1185736491-" + "9920375516-" + "aB3dE5gH7jK9mN1p"
GOOGLE = "AI" + "za" + "SyD4" + "fK9xLm2Qw7Rt3Vb8Nc1Hj6Zp0Gs5TyUe"
STRIPE_LIVE = "sk" + "_live_" + "51Hx9QkLm2Rt7Vb4Nc8Kd1F"
STRIPE_RESTRICTED = "rk" + "_test_" + "4eC39HqLyjWDarjtT1zdp7dc"
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    "." + "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
BEARER_OPAQUE = "ya29" + ".a0AfH6SMBx3Kq9Lm2Rt7Vb4Nc8"
PEM_LINE = "MIIEowIBAAKCAQEA7" + "bq98Xk2Lm9Vb4Nc7Kd1Fx3Wy"
PEM_BODY = PEM_LINE + "\nq2Rt7Vb4Nc8Kd1Fj4Tp6Gs0YaZr8Kq2Wm5X\n"
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "-----END " + "RSA PRIVATE KEY-----"
DB_PASSWORD = "S3cr3t" + "Pw0rd!x"
DB_URL = "postgres://app:" + DB_PASSWORD + "@db.internal:5432/orders"
QUERY_TOKEN = "q1w2" + "e3r4t5y6u7i8"
PLAIN_PASSWORD = "correct-horse-" + "battery-staple"
CLIENT_SECRET = "cs_" + "7Yh2Kq9Lm4Rt"
COOKIE_VALUE = "sessionid=" + "8f3b2c1d9e7a"
SET_COOKIE_VALUE = "sid=" + "Zx81Qa77" + "; HttpOnly"
HEADER_API_KEY = "k3y-" + "Vb4Nc8Kd"
REFRESH_TOKEN = "rt_" + "Lm9Vb4Nc7Kd1"
SESSION_ID = "sess_" + "0a9b8c7d"
NESTED_PASS = "p@ss" + "w0rd-9"
PRIVATE_KEY_HEX = "4c0883a6" + "9102937d6231471b5dbb6204fe512961708279f2"
# issue 9: secrets that reached the tape before
BASIC_CREDENTIALS = "dXNlcjpo" + "dW50ZXIyMg=="
COOKIE_SESSION = "sessionid=" + "q8W2e4R6t8Y0"
FREE_API_KEY = "live-" + "Kd8Vb4Nc2Xq"
CONNECT_SID = "s%3A" + "Rt7Vb4Nc8Kd1.Fj4Tp6Gs0Ya"
SESSION_PARAM = "Zr8Kq2" + "Wm5Xn9"
PWD_VALUE = "pw-" + "Lm9Vb4Nc"
PASS_VALUE = "pa-" + "Qw7Rt3Vb"
REPR_PASSWORD = "hunter" + "2-Xq9Lm"
AZURE_ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1" + "OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURE_SAS_KEY = "3nT0yB7Kq9Lm2Rt7" + "Vb4Nc8Kd1Fj4Tp6Gs0Ya="
SENDGRID = "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
NPM_TOKEN = "npm" + "_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
NPM_AUTH_TOKEN = "00000000-" + "1111-2222-3333-" + "444455556666"
PYPI_TOKEN = "pypi-" + "AgEIcHlwaS5vcmcCJGE0ZmE3NjU2LTlhOTktNDRkZS1iNzk0LTMxMjA2ZDU5YTkyYQACKlszLCI1"
HUGGINGFACE = "hf" + "_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
SUPABASE_SECRET = "sb" + "_secret_" + "aBcDeFgHiJkLmNoPqRsTuV_0123456789"
ASANA_PAT = "2/" + "1203456789012345/1209876543210987:" + "0123456789abcdef" * 2
FIRECRAWL = "fc" + "-" + "fedcba9876543210" * 2
JWE = (
    "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ"  # {"alg":"RSA-OAEP","enc":"A256GCM"}
    + "."
    + "Zk9vQmFy-S2V5X0VuY3J5cHRlZF9mb3JfdGVzdHNfb25seV8wMTIzNDU2Nzg5"
    + "."
    + "SVZfMTIzNDU2Nzg5"
    + "."
    + "Q2lwaGVydGV4dF9vZl9hX3Rlc3RfdmFsdWVfXzAxMjM0NTY3ODlhYmNkZWY"
    + "."
    + "VGFnXzAxMjM0NTY3ODlh"
)
SLACK_WEBHOOK_PATH = "services/" + "T01ABCDEF/B02GHIJKL/" + "x9Yz8Wv7Ut6Sr5Qp4On3Ml2K"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
URL_AT_PASSWORD = "p@ss" + "Word42"

SECRETS = [
    AWS_KEY_ID,
    AWS_STS_KEY_ID,
    GITHUB_CLASSIC,
    GITHUB_OAUTH,
    GITHUB_FINE_GRAINED,
    GITLAB,
    OPENAI_PROJECT,
    OPENAI_LEGACY,
    ANTHROPIC,
    SLACK_BOT,
    SLACK_USER,
    GOOGLE,
    STRIPE_LIVE,
    STRIPE_RESTRICTED,
    JWT,
    BEARER_OPAQUE,
    PEM_LINE,
    PEM_BODY,
    DB_PASSWORD,
    QUERY_TOKEN,
    PLAIN_PASSWORD,
    CLIENT_SECRET,
    COOKIE_VALUE,
    SET_COOKIE_VALUE,
    HEADER_API_KEY,
    REFRESH_TOKEN,
    SESSION_ID,
    NESTED_PASS,
    PRIVATE_KEY_HEX,
    BASIC_CREDENTIALS,
    COOKIE_SESSION,
    FREE_API_KEY,
    CONNECT_SID,
    SESSION_PARAM,
    PWD_VALUE,
    PASS_VALUE,
    REPR_PASSWORD,
    AZURE_ACCOUNT_KEY,
    AZURE_SAS_KEY,
    SENDGRID,
    NPM_TOKEN,
    NPM_AUTH_TOKEN,
    PYPI_TOKEN,
    HUGGINGFACE,
    SLACK_WEBHOOK_PATH,
    AWS_SECRET,
    URL_AT_PASSWORD,
]

# Issue 9's free-text forms: each line holds one of the secrets above where a real one would be.
FREE_TEXT = [
    f"curl -H 'Authorization: Basic {BASIC_CREDENTIALS}' https://api.example.com",
    f"Cookie: {COOKIE_SESSION}; theme=dark",
    f"X-API-Key: {FREE_API_KEY}",
    f"Set-Cookie: connect.sid={CONNECT_SID}; Path=/; HttpOnly",
    f"redirect to /home?session={SESSION_PARAM}&lang=en",
    f"mysql -u app pwd={PWD_VALUE}",
    f"ftp login pass={PASS_VALUE}",
    f"ValueError({{'password': '{REPR_PASSWORD}'}})",
    f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_ACCOUNT_KEY};EndpointSuffix=core.windows.net",
    f"Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={AZURE_SAS_KEY}",
    f"SENDGRID_API_KEY {SENDGRID}",
    f"npm publish with {NPM_TOKEN}",
    f"//registry.npmjs.org/:_authToken={NPM_AUTH_TOKEN}",
    f"twine upload -p {PYPI_TOKEN}",
    f"HF token {HUGGINGFACE}",
    f"post to https://hooks.slack.com/{SLACK_WEBHOOK_PATH}",
    f"aws_secret_access_key = {AWS_SECRET}",
    f"postgres://app:{URL_AT_PASSWORD}@db.internal:5432/orders",
]

# One sample text per built-in pattern, with the name its placeholder must carry.
PATTERN_SAMPLES = [
    ("aws_access_key", f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID} && aws s3 ls", AWS_KEY_ID),
    ("aws_access_key", f"temporary id {AWS_STS_KEY_ID}.", AWS_STS_KEY_ID),
    ("github_token", f"git clone with {GITHUB_CLASSIC} now", GITHUB_CLASSIC),
    ("github_token", f"oauth={GITHUB_OAUTH}", GITHUB_OAUTH),
    ("github_token", f"token: {GITHUB_FINE_GRAINED}", GITHUB_FINE_GRAINED),
    ("gitlab_token", f"PRIVATE-TOKEN: {GITLAB}", GITLAB),
    ("openai_api_key", f"OPENAI_API_KEY: {OPENAI_PROJECT}", OPENAI_PROJECT),
    ("openai_api_key", f"key '{OPENAI_LEGACY}' rotated", OPENAI_LEGACY),
    ("anthropic_api_key", f"x-api-key: {ANTHROPIC}", ANTHROPIC),
    ("slack_token", f"slack bot {SLACK_BOT}", SLACK_BOT),
    ("slack_token", f"({SLACK_USER})", SLACK_USER),
    ("google_api_key", f"https://maps.example.com/api?key={GOOGLE}&q=x", GOOGLE),
    ("stripe_key", f"stripe.api_key = '{STRIPE_LIVE}'", STRIPE_LIVE),
    ("stripe_key", f"restricted {STRIPE_RESTRICTED}", STRIPE_RESTRICTED),
    ("jwt", f"id_token is {JWT} (expires soon)", JWT),
    ("bearer", f"curl -H 'Authorization: Bearer {BEARER_OPAQUE}' https://api.example.com", BEARER_OPAQUE),
    ("bearer", f"authorization: bearer {BEARER_OPAQUE}", BEARER_OPAQUE),
    ("private_key", f"key file:\n{PEM}\nend of file", PEM_BODY),
    ("url_credentials", f"connect to {DB_URL} please", DB_PASSWORD),
    ("secret_param", f"GET https://api.example.com/v1/items?access_token={QUERY_TOKEN}&page=2", QUERY_TOKEN),
    ("secret_param", f"DefaultEndpointsProtocol=https;AccountKey={AZURE_ACCOUNT_KEY};x=1", AZURE_ACCOUNT_KEY),
    ("secret_param", f"Endpoint=sb://bus/;SharedAccessKey={AZURE_SAS_KEY}", AZURE_SAS_KEY),
    ("secret_param", f"//registry.npmjs.org/:_authToken={NPM_AUTH_TOKEN}", NPM_AUTH_TOKEN),
    ("secret_param", f"Set-Cookie-less log: connect.sid={CONNECT_SID} ok", CONNECT_SID),
    ("secret_param", f"/home?session={SESSION_PARAM}&lang=en", SESSION_PARAM),
    ("secret_param", f"mysql pwd={PWD_VALUE}", PWD_VALUE),
    ("secret_param", f"login pass={PASS_VALUE}", PASS_VALUE),
    ("aws_secret_key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws_secret_key", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("sendgrid_key", f"key {SENDGRID}", SENDGRID),
    ("npm_token", f"npm publish with {NPM_TOKEN}", NPM_TOKEN),
    ("pypi_token", f"twine upload -p {PYPI_TOKEN}", PYPI_TOKEN),
    ("huggingface_token", f"HF token {HUGGINGFACE}", HUGGINGFACE),
    ("slack_webhook", f"post to https://hooks.slack.com/{SLACK_WEBHOOK_PATH}", SLACK_WEBHOOK_PATH),
    ("url_credentials", f"postgres://app:{URL_AT_PASSWORD}@db.internal:5432/orders", URL_AT_PASSWORD),
    ("supabase_key", f"createClient(url, {SUPABASE_SECRET})", SUPABASE_SECRET),
    ("asana_token", f"asana pat {ASANA_PAT}", ASANA_PAT),
    ("firecrawl_key", f"FirecrawlApp(api={FIRECRAWL})", FIRECRAWL),
    ("jwe", f"the id_token came back as {JWE} (encrypted)", JWE),
]

# The field rules (a secret named in free text): tried at trigger words, not through the gates.
FIELD_SAMPLES = [
    ("header", f"curl -H 'Authorization: Basic {BASIC_CREDENTIALS}' https://api.example.com", BASIC_CREDENTIALS),
    ("header", f"Cookie: {COOKIE_SESSION}; theme=dark", COOKIE_SESSION),
    ("header", f"X-API-Key: {FREE_API_KEY}", FREE_API_KEY),
    ("secret_field", f"ValueError({{'password': '{REPR_PASSWORD}'}})", REPR_PASSWORD),
    ("secret_field", f"connect(user='app', password='{REPR_PASSWORD}')", REPR_PASSWORD),
    ("secret_field", f'config was {{"api_key": "{FREE_API_KEY}"}} then', FREE_API_KEY),
]


def realistic_value() -> dict[str, object]:
    """A recorded step's data with every fake secret placed somewhere a real one could be."""
    return {
        "args": {
            "query": "orders for customer c_17 since 2024-01-01",
            "max_tokens": 1024,
            "api_key": "plain-value-" + HEADER_API_KEY,
            "password": PLAIN_PASSWORD,
            "note": f"use {AWS_KEY_ID} for the legacy bucket",
            "config": {
                "database_url": DB_URL,
                "auth": {"user": "svc", "pass": NESTED_PASS},
                "client_secret": CLIENT_SECRET,
                "signing": {"privateKey": PRIVATE_KEY_HEX},
            },
            "headers": [
                ["Authorization", "Bearer " + BEARER_OPAQUE],
                ("Cookie", COOKIE_VALUE),
                ["Accept", "application/json"],
                ["X-Api-Key", HEADER_API_KEY],
            ],
        },
        "result": {
            "status": 200,
            "usage": {"input_tokens": 812, "output_tokens": 96, "total_tokens": 908},
            "har_headers": [
                {"name": "set-cookie", "value": SET_COOKIE_VALUE},
                {"name": "content-type", "value": "application/json"},
            ],
            "items": [
                {"id": 1, "env": {"GITHUB_TOKEN": GITHUB_CLASSIC, "HOME": "/home/app"}},
                {"id": 2, "log": f"deployed with {GITHUB_FINE_GRAINED} and {GITLAB}, app {GITHUB_OAUTH}"},
                [f"openai {OPENAI_PROJECT}", f"legacy {OPENAI_LEGACY}", f"claude {ANTHROPIC}"],
                {"slack": [SLACK_BOT, {"user": SLACK_USER}], "maps": GOOGLE},
                {"billing": f"charge via {STRIPE_LIVE} / {STRIPE_RESTRICTED}"},
                {"id_token_text": f"got {JWT}", "sts": AWS_STS_KEY_ID},
                {"files": {"deploy.pem": PEM}},
                {"callback": f"https://hooks.example.com/cb?access_token={QUERY_TOKEN}"},
                {"log": FREE_TEXT},
            ],
            "raw": orjson.dumps({"refresh_token": REFRESH_TOKEN, "expires_in": 3600}).decode(),
            "sessionId": SESSION_ID,
        },
    }


def json_forms(secret: str) -> list[bytes]:
    """The secret as bytes: raw, JSON-escaped, and escaped twice (JSON text inside JSON)."""
    once = orjson.dumps(secret)[1:-1]
    twice = orjson.dumps(once.decode())[1:-1]
    return [secret.encode(), once, twice]


def assert_no_secret(data: bytes) -> None:
    leaked = [secret for secret in SECRETS if any(form in data for form in json_forms(secret))]
    assert leaked == []
