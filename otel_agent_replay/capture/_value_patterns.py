"""The built-in value patterns: the token shapes, their prefilter gates, and the field rules.

Each ``Rule`` is one secret shape; ``_redact_rules.compile_rules`` joins them into one gated
alternation (and the field rules into another); ``_scan`` applies them to a string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Rule:
    """One value pattern: ``before`` and ``after`` are kept, ``secret`` is replaced.

    ``gates`` are (guard, branch) pairs for the prefilter. Every branch starts with a
    literal character that lies in the first ``MAX_ANCHOR_OFFSET + 1`` characters of any
    match of the rule, and matches wherever the rule can match; the guard is one
    character every match contains, checked first with a plain ``in`` (memchr).
    """

    name: str
    secret: str
    gates: tuple[tuple[str, str], ...]
    before: str = ""
    after: str = ""


MAX_ANCHOR_OFFSET: Final = 6  # "github_pat_": the gate anchors on the "_" after "github"
"""A match starts at most this many characters before the position its gate finds."""

_TOKEN68 = r"[A-Za-z0-9\-._~+/]"
_PARAM_NAMES = (
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "sig",
    "signature",
    "pass",
    "accountkey",
    "sharedaccesskey",
    "sharedaccesssignature",
    "authtoken",
    "session",
    "sessionid",
    "sid",
)
_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
# "sk-" not inside a word, so "task-" and "risk-" do not count as candidates.
_SK_GATE = r"-(?<=sk-)(?<![A-Za-z0-9]sk-)"
# The one-character look-behind first turns most "=" away cheaply (code has many).
_PARAM_GATE = (
    "=(?i:(?<=["
    + "".join(sorted({name[-1] for name in _PARAM_NAMES}))
    + "]=)(?:"
    + "|".join(f"(?<={re.escape(name)}=)" for name in _PARAM_NAMES)
    + "))"
)

# Free-text header lines ("Authorization: Basic ...", "Cookie: ...", "X-API-Key: ..."): the rest of
# the line (up to a quote) is the secret. "Authorization: Bearer ..." is left to the bearer pattern.
_HEADER_NAMES = r"(?:proxy-)?authorization|set-cookie|cookie|x-api-key|api-key|x-auth-token|x-access-token"
# Quoted secret fields in free text: a repr ("{'password': 'x'}"), kwargs ("password='x'"), JSON in prose.
_FIELD_NAMES = (
    r"password|passwd|passphrase|pwd|pass|secret|client_secret|api_?key|access_?token|refresh_?token|"
    r"auth_?token|id_?token|token|private_?key|session_?id|cookie|authorization|credentials?"
)
_FIELD_BEFORE = rf"(?<![A-Za-z0-9])(?i:{_FIELD_NAMES})"

RULES: Final = (
    Rule(
        "private_key",
        # An unterminated block (a truncated result) is redacted to the end of the string.
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        (("-", "-----BEGIN"),),
    ),
    Rule(
        "aws_access_key",
        r"(?:AKIA|ASIA)[A-Z0-9]{16}",
        (("A", "A(?:KIA|SIA)"),),
        before=r"(?<![A-Z0-9])",
    ),
    Rule(
        "github_token",
        r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
        (("_", r"_(?<=gh[pousr]_)"), ("_", r"_pat_(?<=github_pat_)")),
    ),
    Rule("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}", (("-", r"-(?<=glpat-)"),)),
    # Before openai_api_key: at one position the first matching branch wins.
    Rule(
        "anthropic_api_key",
        r"sk-ant-[A-Za-z0-9_\-]{20,}",
        (("-", _SK_GATE),),
        before=_NOT_ALNUM_BEFORE,
    ),
    Rule(
        "openai_api_key",
        r"sk-[A-Za-z0-9_\-]{20,}",
        (("-", _SK_GATE),),
        before=_NOT_ALNUM_BEFORE,
    ),
    Rule(
        "stripe_key",
        r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}",
        (("_", r"_(?<=[spr]k_)(?<![A-Za-z0-9][spr]k_)(?:live|test)_"),),
        before=_NOT_ALNUM_BEFORE,
    ),
    Rule(
        "slack_token",
        r"xox[abeoprs]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}",
        (("-", r"-(?<=xox[abeoprs]-)"), ("-", r"-(?<=xapp-)")),
    ),
    Rule("google_api_key", r"AIza[0-9A-Za-z_\-]{35}", (("A", "AIza"),)),
    # A JWE (compact serialisation: five base64url segments, the header JSON); before jwt, which needs "eyJ" twice.
    Rule(
        "jwe",
        r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        (("J", r"J(?<=eyJ)"),),
    ),
    Rule(
        "jwt",
        r"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
        (("J", r"J(?<=eyJ)"),),
    ),
    Rule(
        "bearer",
        # A digit, or 20+ characters: "a bearer token" in prose is not a token.
        rf"(?={_TOKEN68}*[0-9]){_TOKEN68}+=*|{_TOKEN68}{{20,}}=*",
        (("b", r"bearer[ \t]"), ("B", r"B(?:earer|EARER)[ \t]")),
        before=_NOT_ALNUM_BEFORE + r"(?:[Bb]earer|BEARER)[ \t]+",
    ),
    Rule(
        "aws_secret_key",
        r"[A-Za-z0-9/+=]{20,}",
        (("_", r"_(?<=aws_)secret_access_key"), ("_", r"_(?<=AWS_)SECRET_ACCESS_KEY")),
        before=r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY)[ \t]*[=:][ \t]*[\"']?",
    ),
    Rule(
        "sendgrid_key",
        r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        (("G", r"G\.(?<=SG\.)"),),  # "G" is rarer than "." in text: a cheaper guard
        before=_NOT_ALNUM_BEFORE,
    ),
    Rule("npm_token", r"npm_[A-Za-z0-9]{36}", (("_", r"_(?<=npm_)"),), before=_NOT_ALNUM_BEFORE),
    Rule("pypi_token", r"pypi-[A-Za-z0-9_\-]{50,}", (("-", r"-(?<=pypi-)"),), before=_NOT_ALNUM_BEFORE),
    Rule("huggingface_token", r"hf_[A-Za-z0-9]{30,}", (("_", r"_(?<=hf_)"),), before=_NOT_ALNUM_BEFORE),
    Rule(
        "supabase_key",
        r"sb_secret_[A-Za-z0-9_\-]{16,}",
        (("_", r"_secret_(?<=sb_secret_)"),),
        before=_NOT_ALNUM_BEFORE,
    ),
    # Asana personal access tokens: "1/<user id>:<32 hex>" and "2/<user id>/<app id>:<32 hex>".
    Rule(
        "asana_token",
        r"[12]/[0-9]{4,20}(?:/[0-9]{4,20})?:[0-9a-f]{32}(?![0-9A-Za-z])",
        (("/", r"/(?<=[12]/)[0-9]{4,20}(?:/[0-9]{4,20})?:[0-9a-f]{32}"),),
        before=r"(?<![A-Za-z0-9/._\-])",
    ),
    Rule(
        "firecrawl_key",
        r"fc-[0-9a-f]{32}(?![0-9A-Za-z])",
        (("-", r"-(?<=fc-)[0-9a-f]{32}"),),
        before=_NOT_ALNUM_BEFORE,
    ),
    Rule(
        "slack_webhook",
        r"(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
        (("k", r"ks\.slack\.com/(?<=hooks\.slack\.com/)"),),
        before=r"hooks\.slack\.com/",
    ),
    Rule(
        "url_credentials",
        # No "[" in the user part, so a redacted URL does not match again; the password runs to
        # the last "@" before the host, so an unencoded "@" in it is redacted too.
        r"[^\s/@:\[\]]*:[^\s/]+",
        (("@", r"://[^\s/@:\[\]]*:[^\s/]+@"),),
        before="://",
        after="@",
    ),
    Rule(
        "secret_param",
        r"[^\s&;,\"'#<>\[\]]+",
        (("=", _PARAM_GATE),),
        before="(?i:" + "|".join(f"(?<={re.escape(n)})" for n in _PARAM_NAMES) + ")=",
    ),
)

# Field rules: a secret named in free text. Their regexes are case-insensitive and have no cheap
# one-character gate, so they are not in the gated alternation: a string is tried with them only
# where it holds one of ``FIELD_TRIGGERS`` (lower-cased), at the few positions before it.
FIELD_RULES: Final = (
    Rule(
        "header",
        r"(?![Bb]earer[ \t]|BEARER[ \t]|\[REDACTED)[^\s'\"][^\r\n'\"]*",
        ((":", rf"(?i:{_HEADER_NAMES})[ \t]{{0,4}}:"),),
        before=rf"(?<![A-Za-z0-9-])(?i:{_HEADER_NAMES})[ \t]{{0,4}}:[ \t]*",
    ),
    Rule(
        "secret_field",
        r"(?!\[REDACTED)[^'\r\n]+",
        (("'", rf"(?i:{_FIELD_NAMES})'?[ \t]{{0,4}}[:=][ \t]*'"),),
        before=_FIELD_BEFORE + r"'?[ \t]{0,4}[:=][ \t]*'",
        after="'",
    ),
    Rule(
        "secret_field",
        r'(?!\[REDACTED)[^"\\\r\n]+',
        (('"', rf'(?i:{_FIELD_NAMES})(?:\\?")?[ \t]{{0,4}}[:=][ \t]*\\?"'),),
        before=_FIELD_BEFORE + r'(?:\\?")?[ \t]{0,4}[:=][ \t]*\\?"',
        after='\\\\?"',
    ),
)
FIELD_TRIGGERS: Final = ("pass", "pwd", "secret", "key", "token", "session", "cookie", "auth", "credential")
FIELD_LOOKBACK: Final = 14
"""A field match starts at most this many characters before the trigger it holds ("x-access-token")."""

PATTERN_NAMES: Final = tuple(dict.fromkeys(rule.name for rule in (*RULES, *FIELD_RULES)))
"""Names of the built-in value patterns, as they appear in ``"[REDACTED:<name>]"``."""
