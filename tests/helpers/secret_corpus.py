"""Issue 22's corpus: secrets that none of the project's own token shapes name, in the places an agent meets them.

Every value is made here from a seeded generator (so no scanner mistakes this file for a leak, and
the values are the same in every run): ``CORPUS`` is a list of ``Sample``s, each the text a tool or a
model would see (``text``) and the secret inside it that must never reach a tape (``secret``).
``IDENTIFIERS`` are the values an agent needs back exactly as they were (ids, digests, thumbnails).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
import urllib.parse
import uuid
from dataclasses import dataclass

_rng = random.Random(22)

_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
_DIGITS = "0123456789"
_ALNUM = _LOWER + _UPPER + _DIGITS
_HEX = "0123456789abcdef"


def _pick(alphabet: str, n: int) -> str:
    """n characters of ``alphabet``, with at least one digit, one lower and one upper when it has them."""
    while True:
        out = "".join(_rng.choice(alphabet) for _ in range(n))
        need = [group for group in (_DIGITS, _LOWER, _UPPER) if any(c in alphabet for c in group)]
        if n < 8 or all(any(c in group for c in out) for group in need):
            return out


def _alnum(n: int) -> str:
    return _pick(_ALNUM, n)


def _hex(n: int) -> str:
    return _pick(_HEX, n)


def _b64(n: int) -> str:
    return _pick(_ALNUM + "+/", n)


def _urlsafe(n: int) -> str:
    return _pick(_ALNUM + "-_", n)


@dataclass(frozen=True)
class Sample:
    """One secret in the text that carries it: ``text`` holds ``secret`` (or its encoded forms, ``also``)."""

    name: str
    text: str
    secret: str
    also: tuple[str, ...] = ()
    """Encoded forms of the secret as ``text`` spells them: none of them may reach a tape either."""

    def forms(self) -> tuple[str, ...]:
        """Every spelling of the secret that must not be recorded."""
        return (self.secret, *self.also)


def _s(name: str, secret: str, template: str = "{}") -> Sample:
    return Sample(name, template.format(secret), secret)


def _token_samples() -> list[Sample]:
    """Vendor token formats that the project's own value patterns never named (the maintained detector's job)."""
    p = "_"  # pieces keep the prefixes apart in this file
    return [
        _s("vault", "hv" + "s." + "CAESI" + _urlsafe(90), "VAULT_TOKEN is {} for now"),
        _s("vault_batch", "hv" + "b." + "AAAAAQ" + _urlsafe(130), "batch token {}"),
        _s("databricks", "dap" + "i" + _hex(32), "databricks host token {}"),
        _s("shopify_access", "shp" + "at" + p + _hex(32), "shop token {}"),
        _s("shopify_custom", "shp" + "ca" + p + _hex(32), "custom app {}"),
        _s("shopify_private", "shp" + "pa" + p + _hex(32), "private app {}"),
        _s("shopify_secret", "shp" + "ss" + p + _hex(32), "shared secret {}"),
        _s("digitalocean", "do" + "p_v1" + p + _hex(64), "doctl auth init -t {}"),
        _s("digitalocean_oauth", "do" + "o_v1" + p + _hex(64), "oauth {}"),
        _s("groq", "gs" + "k" + p + _alnum(52), "GROQ key {}"),
        _s("linear", "lin" + p + "api" + p + _alnum(40), "linear {}"),
        _s("doppler", "dp" + ".pt." + _alnum(43), "doppler run --token {}"),
        _s("replicate", "r8" + p + _alnum(37), "replicate {}"),
        _s("mailgun", "ke" + "y-" + _hex(32), "mailgun api {}"),
        _s("discord_bot", "MT" + _alnum(24) + "." + _urlsafe(6) + "." + _urlsafe(38), "discord bot {}"),
        _s("google_oauth", "ya" + "29." + _urlsafe(120), "{}"),
        _s("hf_org", "api" + p + "org" + p + _pick(_LOWER + _UPPER, 34), "hf org {}"),
        _s("twilio_key", "S" + "K" + _hex(32), "twilio api key sid {}"),
        _s("postman", "PMA" + "K-" + _hex(24) + "-" + _hex(34), "postman {}"),
        _s("atlassian", "ATAT" + "T3x" + _urlsafe(180) + "=" + _hex(8).upper(), "jira {}"),
        _s("square", "EAA" + "A" + _urlsafe(60), "square {}"),
        _s("square_oauth", "sq0" + "csp-" + _urlsafe(43), "square secret {}"),
        _s("dropbox", "sl" + "." + _urlsafe(136), "dropbox {}"),
        _s("notion", "nt" + "n" + p + _alnum(46), "notion {}"),
        _s("sentry_org", "sntr" + "ys" + p + "eyJpYXQiOjE3MDA" + _alnum(60), "sentry {}"),
        _s("grafana_sa", "gl" + "sa" + p + _alnum(32) + p + _hex(8), "grafana {}"),
        _s("grafana_cloud", "gl" + "c" + p + "eyJv" + _alnum(80) + "=", "grafana cloud {}"),
        _s("newrelic", "NRA" + "K-" + _pick(_UPPER + _DIGITS, 27), "new relic {}"),
        _s("terraform", _alnum(14) + ".atlas" + "v1." + _alnum(67), "terraform cloud {}"),
        _s("pulumi", "pu" + "l-" + _hex(40), "pulumi {}"),
        _s("netlify", "nf" + "p" + p + _alnum(36), "netlify {}"),
        _s("supabase", "sb" + "p" + p + _hex(40), "supabase {}"),
        _s("planetscale", "psca" + "le" + p + "tkn" + p + _urlsafe(43), "planetscale {}"),
        _s("age", "AGE-SECRET-" + "KEY-1" + _pick(_UPPER.replace("B", "").replace("O", "") + "023456789", 58), "{}"),
        _s("telegram", str(_rng.randint(10**9, 10**10 - 1)) + ":AA" + _urlsafe(33), "telegram bot {}"),
        _s("facebook", "EAA" + "CEdEose0cBA" + _alnum(100), "fb page {}"),
        _s("mapbox", "s" + "k.eyJ1" + _alnum(56) + "." + _urlsafe(22), "mapbox {}"),
        _s("contentful", "CFPA" + "T-" + _urlsafe(43), "contentful {}"),
        _s("figma", "fig" + "d" + p + _urlsafe(40), "figma {}"),
        _s("flutterwave", "FLWSE" + "CK_TEST-" + _hex(32) + "-X", "flutterwave {}"),
        _s("dynatrace", "dt0" + "c01." + _pick(_UPPER + _DIGITS, 24) + "." + _pick(_UPPER + _DIGITS, 64), "{}"),
        _s("easypost", "EZA" + "K" + _alnum(54), "easypost {}"),
        _s("adafruit", "ai" + "o" + p + _alnum(28), "adafruit {}"),
        _s("prefect", "pn" + "u" + p + _alnum(36), "prefect {}"),
        _s("sourcegraph", "sg" + "p" + p + _hex(40), "sourcegraph {}"),
        _s("tailscale", "tske" + "y-api-" + _alnum(16) + "-" + _alnum(30), "tailscale {}"),
        _s("perplexity", "ppl" + "x-" + _alnum(48), "perplexity {}"),
        _s("xai", "xa" + "i-" + _alnum(80), "grok {}"),
        _s("langsmith", "lsv" + "2_pt" + p + _hex(32) + p + _hex(10), "langsmith {}"),
        _s("pinecone", "pcs" + "k" + p + _alnum(6) + p + _alnum(63), "pinecone {}"),
        _s("docker", "dck" + "r" + p + "pat" + p + _urlsafe(27), "docker login -p {}"),
        _s("gitlab_runner", "gl" + "rt-" + _urlsafe(20), "runner {}"),
        _s("gitlab_trigger", "gl" + "ptt-" + _hex(40), "trigger {}"),
        _s("bitbucket", "ATB" + "B" + _alnum(32), "bitbucket {}"),
        _s("rubygems", "rubyg" + "ems" + p + _hex(48), "gem push key {}"),
        _s("nuget", "oy" + "2" + _pick(_LOWER + _DIGITS, 43), "nuget {}"),
        _s("clojars", "CLOJA" + "RS" + p + _pick(_LOWER + _DIGITS, 60), "clojars {}"),
        _s("shippo", "shipp" + "o" + p + "live" + p + _hex(40), "shippo {}"),
        _s("stripe_webhook", "whs" + "ec" + p + _alnum(32), "webhook signing {}"),
        _s("brevo", "xkeys" + "ib-" + _hex(64) + "-" + _alnum(16), "brevo {}"),
        _s("twitter_bearer", "A" * 22 + _alnum(80), "twitter {}"),
        _s("circleci", "CCIPA" + "T" + p + _alnum(22) + p + _hex(40), "circleci {}"),
        _s("buildkite", "bku" + "a" + p + _hex(40), "buildkite {}"),
        _s("readme", "rdm" + "e" + p + _pick(_LOWER + _DIGITS, 70), "readme {}"),
        _s("typeform", "tf" + "p" + p + _urlsafe(44) + p + _urlsafe(14), "typeform {}"),
        _s("alibaba", "LTA" + "I" + _alnum(20), "alibaba access key {}"),
        _s("tencent", "AKI" + "D" + _alnum(32), "tencent secret id {}"),
        _s("jfrog", "AKC" + "p" + _alnum(69), "artifactory {}"),
        _s("huggingface_new", "h" + "f" + p + _pick(_LOWER + _UPPER, 34), "hf {}"),
        _s("openai_admin", "s" + "k-admin-" + _urlsafe(60), "admin {}"),
        _s("onepassword", "op" + "s" + p + "eyJzaWduSW5BZGRyZXNzIjoi" + _alnum(120), "1password {}"),
        _s("okta", "00" + _urlsafe(40), "Authorization: SSWS {}"),
        _s("private_key_openssh", "b3BlbnNzaC1rZXktdjEAAAAA" + _b64(200), "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n"),
        _s(
            "putty",
            _b64(64),
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
            "AAAAC3NzaC1lZDI1NTE5AAAAIH5k\nPrivate-Lines: 1\n{}\nPrivate-MAC: " + _hex(64) + "\n",
        ),
        _s("unknown_vendor", "zq" + p + _alnum(40), "the vendor's key {}"),
        _s("unknown_bare", _alnum(48), "{}"),
        _s("unknown_b64", _b64(44) + "==", "token {}"),
    ]


def _context_samples() -> list[Sample]:
    """Credentials that look like anything, named by where they sit (the credential-context layer)."""
    w = ["orchid", "velvet", "harbor", "quartz", "meadow", "copper", "lantern", "summit", "falcon", "ember"]

    def pw() -> str:
        return _rng.choice(w) + "-" + _rng.choice(w) + str(_rng.randint(10, 99))

    return [
        _s("yaml", pw(), "database:\n  user: app\n  password: {}\n  host: db"),
        _s("yaml_quoted", pw(), 'smtp:\n  secret: "{}"\n'),
        _s("ini", pw(), "[db]\nuser = app\npassword = {}\nport = 5432\n"),
        _s("ini_colon", pw(), "[auth]\nclient_secret: {}\n"),
        _s("dotenv", pw(), "DEBUG=1\nDB_PASSWORD={}\nPORT=8080\n"),
        _s("dotenv_quoted", pw(), 'export STRIPE_SECRET="{}"\n'),
        _s("django", pw(), "SECRET_KEY = '{}'\nDEBUG = False\n"),
        _s("python_lower", pw(), "app.config(secret_key='{}', debug=True)"),
        _s("netrc", pw(), "machine api.example.com login app password {}\n"),
        _s("netrc_lines", pw(), "machine git.example.com\n  login deploy\n  password {}\n"),
        _s("pgpass", pw(), "db.internal:5432:orders:app:{}\n"),
        _s("xml", pw(), "<config><user>app</user><password>{}</password></config>"),
        _s("xml_attr", pw(), '<datasource user="app" password="{}" url="jdbc:x"/>'),
        _s("header_shopify", _hex(32), "X-Shopify-Access-Token: {}"),
        _s("header_vault", pw(), "X-Vault-Token: {}"),
        _s("header_dd", _hex(32), "DD-API-KEY: {}"),
        _s("header_auth_key", _hex(37), "X-Auth-Key: {}"),
        _s("header_goog", pw(), "x-goog-api-key: {}"),
        _s("header_signature", pw(), "X-Hub-Signature-256: sha256={}"),
        _s("url_code", _urlsafe(20), "https://app.example.com/callback?code={}&state=xyz"),
        _s("url_auth", pw(), "https://db.example.com/.json?auth={}"),
        _s("url_hmac", _hex(40), "https://shop.example.com/admin?hmac={}&shop=x"),
        _s("url_key", pw(), "https://api.example.com/v1/geo?key={}&q=paris"),
        _s("url_client_secret", pw(), "https://idp.example.com/token?client_secret={}&grant_type=x"),
        _s("curl_user", pw(), "curl --user admin:{} https://api.example.com/"),
        _s("curl_u", pw(), "curl -u deploy:{} https://ci.example.com/"),
        _s("repr_dict", pw(), "Config(user='app', password='{}')"),
        _s("repr_tuple", pw(), "auth=('app', '{}')"),
        _s("json_prose", pw(), 'the body was {{"client_secret": "{}", "scope": "read"}}'),
        _s("toml", pw(), '[service]\ntoken = "{}"\n'),
        _s("cli_flag", pw(), "mysql --password={} -h db"),
        _s("cli_flag_space", pw(), "psql --password {} -h db"),
    ]


def _decoded_samples() -> list[Sample]:
    """Secrets hidden by an encoding: base64 JSON, URL-encoding, HTML escaping."""
    token = "gh" + "p_" + _alnum(36)
    token2 = "gh" + "p_" + _alnum(36)
    token3 = "sk-" + "proj-" + _alnum(48)
    pw1 = "maple-" + _alnum(12)
    pw2 = "birch-" + _alnum(12)
    pw3 = "larch-" + _alnum(10)
    pem = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _b64(64)
    blob = base64.b64encode(json.dumps({"type": "service", "access_token": pw1}).encode()).decode()
    blob2 = base64.urlsafe_b64encode(json.dumps({"key": token}).encode()).decode().rstrip("=")
    pem_text = urllib.parse.quote("-----BEGIN PRIVATE KEY-----\n" + pem + "\n-----END PRIVATE KEY-----")
    return [
        Sample("base64_json", f"state={blob}", pw1, (blob,)),
        Sample("base64url_json", f"cursor {blob2}", token, (blob2,)),
        Sample("url_encoded_pem", "key=" + pem_text, pem, (urllib.parse.quote(pem[:40]),)),
        Sample("url_encoded_param", "redirect=" + urllib.parse.quote(f"/cb?access_token={pw2}&x=1", safe=""), pw2),
        Sample("html_json", html.escape(json.dumps({"password": pw3})), pw3),
        Sample("html_token", html.escape(f"<b>{token2}</b>"), token2),
        Sample("url_encoded_token", urllib.parse.quote(f"key: {token3}"), token3),
    ]


def _sentence_and_header_samples() -> list[Sample]:
    """Issue 30, item 7: credential context in sentences and header lines, and formats that leaked before."""
    w = ["willow", "granite", "saffron", "cobalt", "thistle", "juniper", "marble", "poplar"]

    def pw() -> str:
        return _rng.choice(w) + "-" + _rng.choice(w) + str(_rng.randint(10, 99))

    def b64url(n: int) -> str:
        return base64.urlsafe_b64encode(bytes(_rng.randrange(256) for _ in range(n))).decode().rstrip("=")

    basic = base64.b64encode(f"deploy:{pw()}".encode()).decode()
    basic_short = base64.b64encode(f"ci:{_alnum(6)}".encode()).decode().rstrip("=")
    jwe_header = base64.urlsafe_b64encode(b'{"alg":"RSA-OAEP-256","enc":"A256GCM"}').decode().rstrip("=")
    jwe_dir = base64.urlsafe_b64encode(b'{"alg":"dir","enc":"A128CBC-HS256"}').decode().rstrip("=")
    digits = "0123456789"
    return [
        _s("bearer_sentence", _urlsafe(32), "the client retried with Bearer {} and got a 401"),
        _s("bearer_event", _alnum(40), "request failed: Bearer {} was rejected"),
        _s("basic_sentence", basic, "it sent Basic {} to the proxy"),
        _s("basic_unpadded", basic_short, "auth was basic {}, then it failed"),
        _s("header_apim", _hex(32), "Ocp-Apim-Subscription-Key: {}"),
        _s("header_any_key", pw(), "X-Partner-Key: {}"),
        _s("header_any_token", pw(), "X-Upstream-Token: {}\nAccept: */*"),
        _s("repr_signing_key", pw(), "Settings(signing_key='{}', debug=True)"),
        _s("repr_named_secret", pw(), "Webhook(url='https://h.example.com', shared_secret='{}')"),
        _s("yaml_signing_key", pw(), "jwt:\n  signing_key: {}\n  ttl: 3600\n"),
        _s("yaml_camel_key", pw(), 'crypto:\n  encryptionKey: "{}"\n'),
        _s("ini_named_key", pw(), "[license]\nlicense_key = {}\nseats = 5\n"),
        _s("ini_named_secret", pw(), "[oauth]\napp_secret: {}\n"),
        _s("supabase_secret", "sb" + "_secret_" + _urlsafe(31), "SUPABASE_SERVICE_ROLE {}"),
        _s("supabase_hex", "sb" + "_secret_" + _hex(32), "the service uses {} for admin calls"),
        _s("asana_v1", "1/" + _pick(digits, 16) + ":" + _hex(32), "asana {}"),
        _s("asana_v2", "2/" + _pick(digits, 16) + "/" + _pick(digits, 16) + ":" + _hex(32), "asana pat {}"),
        _s("firecrawl", "fc" + "-" + _hex(32), "firecrawl client with {}"),
        _s("jwe", ".".join([jwe_header, b64url(256), b64url(12), b64url(48), b64url(16)]), "encrypted {}"),
        _s("jwe_direct", ".".join([jwe_dir, "", b64url(16), b64url(32), b64url(16)]), "cookie was {}"),
    ]


CORPUS: list[Sample] = [*_token_samples(), *_context_samples(), *_decoded_samples(), *_sentence_and_header_samples()]
"""Every sample: the text a tool or model sees, and the secret in it."""


def _png_thumbnail(seed: int) -> str:
    raw = bytes(_rng.randrange(256) for _ in range(48 + seed))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + raw).decode()


def _jpeg_thumbnail(seed: int) -> str:
    raw = bytes(_rng.randrange(256) for _ in range(60 + seed))
    return base64.b64encode(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + raw).decode()


IDENTIFIERS: list[str] = [
    *(str(uuid.UUID(int=_rng.getrandbits(128), version=4)) for _ in range(6)),
    *(uuid.UUID(int=_rng.getrandbits(128), version=4).hex for _ in range(2)),
    *(hashlib.sha256(f"artifact {n}".encode()).hexdigest() for n in range(4)),
    *("sha256:" + hashlib.sha256(f"layer {n}".encode()).hexdigest() for n in range(2)),
    *(hashlib.sha1(f"commit {n}".encode()).hexdigest() for n in range(4)),
    *(hashlib.md5(f"etag {n}".encode()).hexdigest() for n in range(2)),
    *(f"ord_{_rng.randint(10**6, 10**7)}" for _ in range(2)),
    *(f"cus_{_alnum(14)}" for _ in range(2)),
    *(f"ORD-2026-{_rng.randint(10**5, 10**6)}" for _ in range(2)),
    *(f"{_rng.getrandbits(60)}" for _ in range(2)),
    *(_png_thumbnail(n) for n in range(3)),
    *(_jpeg_thumbnail(n) for n in range(2)),
    "data:image/png;base64," + _png_thumbnail(9),
    "01J" + _pick("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 23),
]
"""Values an agent needs back unchanged: UUIDs, digests, order and customer ids, thumbnails."""


def _issue_9_samples() -> list[Sample]:
    from .secrets import FIELD_SAMPLES, PATTERN_SAMPLES

    return [
        Sample(f"issue9_{n}_{kind}", text, secret)
        for n, (kind, text, secret) in enumerate(PATTERN_SAMPLES + FIELD_SAMPLES)
    ]


ALL_SAMPLES: list[Sample] = [*CORPUS, *_issue_9_samples()]
"""The new corpus and issue 9's samples (the shapes the project's own patterns name): the whole test corpus."""
