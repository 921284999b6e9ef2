"""The redaction rules: which keys name secrets, which value shapes are secrets.

``compile_rules`` turns a ``Redactor``'s configuration (extra key names, extra value
patterns, whether the defaults apply) into one ``CompiledRules``: the key-name decision,
the value patterns joined into a single alternation with their prefilter gates, and the
cheap key words ``Redactor.may_redact`` looks for. The walk over JSON data and the
string scan that uses these live in ``otel_agent_replay.redact``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from otel_agent_replay.core import ConfigurationError

__all__ = [
    "FIELD_LOOKBACK",
    "MAX_ANCHOR_OFFSET",
    "PATTERN_NAMES",
    "PII_NAMES",
    "CompiledRules",
    "compile_rules",
    "pattern_placeholder",
    "redact_pii",
]


def pattern_placeholder(name: str) -> str:
    """What a secret found by a value pattern becomes: ``"[REDACTED:<name>]"``."""
    return f"[REDACTED:{name}]"


# Shortest text any built-in pattern can match ("pwd=x"); shorter strings skip the scan.
_MIN_SECRET_LEN: Final = 5

# --- secret key names -----------------------------------------------------------------

_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# A key is read as lower-case words (camelCase and separators split): "X-Api-Key" ->
# x, api, key. It is secret when, reading its words left to right and joining them,
# the joined text ends with one of these at a word boundary; the word may end a
# compound ("accesstoken", "openaiapikey") but must end where a word of the key ends.
_SECRET_SUFFIXES: Final = (
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "secret",
    "secrets",
    "apikey",
    "apikeys",
    "authorization",
    "cookie",
    "cookies",
    "privatekey",
    "accesskey",
    "credential",
    "credentials",
    "accesstokens",
    "refreshtokens",
    "authtokens",
    "apitokens",
    "idtokens",
    "bearertokens",
)
# Whole words that are secret on their own.
_SECRET_WORDS: Final = frozenset({"jwt", "jwts", "creds", "sessionid", "sessionkey", "pwd", "pass"})
# "token" and "session" also name counts and limits; a key holding one of these words
# is a count, not a secret (max_tokens is plural anyway, but token_count, max_token,
# session_count are not).
_COUNT_WORDS: Final = frozenset(
    {
        "max",
        "min",
        "num",
        "n",
        "count",
        "counts",
        "limit",
        "limits",
        "usage",
        "budget",
        "total",
        "input",
        "output",
        "prompt",
        "completion",
        "completions",
        "cached",
        "reasoning",
        "remaining",
        "used",
        "length",
        "len",
        "size",
        "estimate",
        "estimated",
        "per",
    }
)

# Every default secret key, in any spelling the key rules accept, contains one of these
# when lower-cased ("pass" covers password, passwd, passphrase; "cred" credential(s) and
# creds; "key" api/private/access keys). A few plain substring checks cost far less
# than one case-insensitive alternation over the same text.
_DEFAULT_KEY_WORDS: Final = ("pass", "pwd", "secret", "auth", "cookie", "cred", "token", "jwt", "session", "key")


def _words(key: str) -> tuple[str, ...]:
    return tuple(word.lower() for word in _SEGMENT.findall(key))


def _ends_with_any(words: tuple[str, ...], suffixes: tuple[str, ...]) -> bool:
    """Whether the words joined from the first up to some word end with one of ``suffixes``."""
    joined = ""
    for word in words:
        joined += word
        if joined.endswith(suffixes):
            return True
    return False


def _is_default_secret(words: tuple[str, ...]) -> bool:
    if words[-1] == "auth":  # requests/httpx style auth=(user, password), basic_auth, proxy_auth
        return True
    if not _SECRET_WORDS.isdisjoint(words) or _ends_with_any(words, _SECRET_SUFFIXES):
        return True
    # "session" and "...token" are secrets unless the key also names a count.
    return _COUNT_WORDS.isdisjoint(words) and ("session" in words or _ends_with_any(words, ("token",)))


def _key_words(defaults: bool, user_words: list[tuple[str, ...]]) -> tuple[str, ...]:
    found = list(_DEFAULT_KEY_WORDS) if defaults else []
    # A key ending in a user key's words contains that key's last word.
    found.extend(words[-1] for words in user_words if words)
    return tuple(dict.fromkeys(found))


# --- value patterns ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
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

_RULES: Final = (
    _Rule(
        "private_key",
        # An unterminated block (a truncated result) is redacted to the end of the string.
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        (("-", "-----BEGIN"),),
    ),
    _Rule(
        "aws_access_key",
        r"(?:AKIA|ASIA)[A-Z0-9]{16}",
        (("A", "A(?:KIA|SIA)"),),
        before=r"(?<![A-Z0-9])",
    ),
    _Rule(
        "github_token",
        r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
        (("_", r"_(?<=gh[pousr]_)"), ("_", r"_pat_(?<=github_pat_)")),
    ),
    _Rule("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}", (("-", r"-(?<=glpat-)"),)),
    # Before openai_api_key: at one position the first matching branch wins.
    _Rule(
        "anthropic_api_key",
        r"sk-ant-[A-Za-z0-9_\-]{20,}",
        (("-", _SK_GATE),),
        before=_NOT_ALNUM_BEFORE,
    ),
    _Rule(
        "openai_api_key",
        r"sk-[A-Za-z0-9_\-]{20,}",
        (("-", _SK_GATE),),
        before=_NOT_ALNUM_BEFORE,
    ),
    _Rule(
        "stripe_key",
        r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}",
        (("_", r"_(?<=[spr]k_)(?<![A-Za-z0-9][spr]k_)(?:live|test)_"),),
        before=_NOT_ALNUM_BEFORE,
    ),
    _Rule(
        "slack_token",
        r"xox[abeoprs]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}",
        (("-", r"-(?<=xox[abeoprs]-)"), ("-", r"-(?<=xapp-)")),
    ),
    _Rule("google_api_key", r"AIza[0-9A-Za-z_\-]{35}", (("A", "AIza"),)),
    _Rule(
        "jwt",
        r"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*",
        (("J", r"J(?<=eyJ)"),),
    ),
    _Rule(
        "bearer",
        # A digit, or 20+ characters: "a bearer token" in prose is not a token.
        rf"(?={_TOKEN68}*[0-9]){_TOKEN68}+=*|{_TOKEN68}{{20,}}=*",
        (("b", r"bearer[ \t]"), ("B", r"B(?:earer|EARER)[ \t]")),
        before=_NOT_ALNUM_BEFORE + r"(?:[Bb]earer|BEARER)[ \t]+",
    ),
    _Rule(
        "aws_secret_key",
        r"[A-Za-z0-9/+=]{20,}",
        (("_", r"_(?<=aws_)secret_access_key"), ("_", r"_(?<=AWS_)SECRET_ACCESS_KEY")),
        before=r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY)[ \t]*[=:][ \t]*[\"']?",
    ),
    _Rule(
        "sendgrid_key",
        r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
        (("G", r"G\.(?<=SG\.)"),),  # "G" is rarer than "." in text: a cheaper guard
        before=_NOT_ALNUM_BEFORE,
    ),
    _Rule("npm_token", r"npm_[A-Za-z0-9]{36}", (("_", r"_(?<=npm_)"),), before=_NOT_ALNUM_BEFORE),
    _Rule("pypi_token", r"pypi-[A-Za-z0-9_\-]{50,}", (("-", r"-(?<=pypi-)"),), before=_NOT_ALNUM_BEFORE),
    _Rule("huggingface_token", r"hf_[A-Za-z0-9]{30,}", (("_", r"_(?<=hf_)"),), before=_NOT_ALNUM_BEFORE),
    _Rule(
        "slack_webhook",
        r"(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
        (("k", r"ks\.slack\.com/(?<=hooks\.slack\.com/)"),),
        before=r"hooks\.slack\.com/",
    ),
    _Rule(
        "url_credentials",
        # No "[" in the user part, so a redacted URL does not match again; the password runs to
        # the last "@" before the host, so an unencoded "@" in it is redacted too.
        r"[^\s/@:\[\]]*:[^\s/]+",
        (("@", r"://[^\s/@:\[\]]*:[^\s/]+@"),),
        before="://",
        after="@",
    ),
    _Rule(
        "secret_param",
        r"[^\s&;,\"'#<>\[\]]+",
        (("=", _PARAM_GATE),),
        before="(?i:" + "|".join(f"(?<={re.escape(n)})" for n in _PARAM_NAMES) + ")=",
    ),
)

# Field rules: a secret named in free text. Their regexes are case-insensitive and have no cheap
# one-character gate, so they are not in the gated alternation: a string is tried with them only
# where it holds one of ``_FIELD_TRIGGERS`` (lower-cased), at the few positions before it.
_FIELD_RULES: Final = (
    _Rule(
        "header",
        r"(?![Bb]earer[ \t]|BEARER[ \t]|\[REDACTED)[^\s'\"][^\r\n'\"]*",
        ((":", rf"(?i:{_HEADER_NAMES})[ \t]{{0,4}}:"),),
        before=rf"(?<![A-Za-z0-9-])(?i:{_HEADER_NAMES})[ \t]{{0,4}}:[ \t]*",
    ),
    _Rule(
        "secret_field",
        r"(?!\[REDACTED)[^'\r\n]+",
        (("'", rf"(?i:{_FIELD_NAMES})'?[ \t]{{0,4}}[:=][ \t]*'"),),
        before=_FIELD_BEFORE + r"'?[ \t]{0,4}[:=][ \t]*'",
        after="'",
    ),
    _Rule(
        "secret_field",
        r'(?!\[REDACTED)[^"\\\r\n]+',
        (('"', rf'(?i:{_FIELD_NAMES})(?:\\?")?[ \t]{{0,4}}[:=][ \t]*\\?"'),),
        before=_FIELD_BEFORE + r'(?:\\?")?[ \t]{0,4}[:=][ \t]*\\?"',
        after='\\\\?"',
    ),
)
_FIELD_TRIGGERS: Final = ("pass", "pwd", "secret", "key", "token", "session", "cookie", "auth", "credential")
FIELD_LOOKBACK: Final = 14
"""A field match starts at most this many characters before the trigger it holds ("x-access-token")."""

PATTERN_NAMES: Final = tuple(dict.fromkeys(rule.name for rule in (*_RULES, *_FIELD_RULES)))
"""Names of the built-in value patterns, as they appear in ``"[REDACTED:<name>]"``."""

# --- user patterns ----------------------------------------------------------------------

_INLINE_FLAGS = re.compile(r"\A\(\?[aiLmsux]+\)")


def _embeddable(pattern: re.Pattern[str]) -> str:
    """The user's pattern as a group that keeps its flags inside a larger alternation."""
    flags = "".join(
        letter
        for flag, letter in (
            (re.IGNORECASE, "i"),
            (re.MULTILINE, "m"),
            (re.DOTALL, "s"),
            (re.VERBOSE, "x"),
            (re.ASCII, "a"),
        )
        if pattern.flags & flag
    )
    # Leading global flags are already in pattern.flags and are not allowed mid-pattern.
    body = _INLINE_FLAGS.sub("", pattern.pattern)
    if "x" in flags:
        body += "\n"  # a trailing comment must not swallow the closing parenthesis
    return f"(?{flags}:{body})" if flags else f"(?:{body})"


def _compile_user_pattern(pattern: object, index: int) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
        return pattern
    if isinstance(pattern, str):
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ConfigurationError(
                f"Redactor pattern #{index} {pattern!r} is not a valid regular expression ({exc}); "
                "fix the pattern or pass a compiled re.Pattern."
            ) from exc
    raise ConfigurationError(
        f"Redactor pattern #{index} is {pattern!r} ({type(pattern).__name__}); "
        "pass a str regular expression or a compiled re.Pattern[str]."
    )


# --- the compiled rules -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompiledRules:
    """One ``Redactor``'s rules, compiled once by ``compile_rules``."""

    defaults: bool
    user_suffixes: tuple[str, ...]
    user_exact: frozenset[str]
    key_cache: dict[str, bool]
    """``Redactor.is_secret_key`` remembers its answers here."""
    # (guard character, regex): a string may hold a secret only if, for some pair, the
    # guard is in it and the regex finds something. Cheap: each regex has a one-character
    # literal prefix, which the re engine scans for with a tight loop.
    prefilters: tuple[tuple[str, re.Pattern[str]], ...]
    gate: re.Pattern[str] | None
    """All prefilter branches in one regex: finds candidate positions in a string."""
    full: re.Pattern[str] | None
    """All value patterns in one alternation, one named group per pattern."""
    placeholders: dict[str, str]
    separate: tuple[tuple[re.Pattern[str], str], ...]
    """User patterns with capturing groups, which cannot join the alternation."""
    min_len: int
    fields: re.Pattern[str] | None
    """The field rules in one alternation (None without the defaults); see ``_FIELD_RULES``."""
    field_triggers: tuple[str, ...]
    key_words: tuple[str, ...]
    """Every secret key name contains one of these, lower-cased (a superset)."""
    key_word_search: re.Pattern[str] | None
    """The key words in one regex, for short text (three times faster there than a find per word)."""

    def decide(self, key: str) -> bool:
        """Whether ``key`` names a secret (uncached; see ``Redactor.is_secret_key``)."""
        if key.casefold() in self.user_exact:
            return True
        words = _words(key)
        if not words:
            return False
        if self.defaults and _is_default_secret(words):
            return True
        return bool(self.user_suffixes) and _ends_with_any(words, self.user_suffixes)


def compile_rules(keys: tuple[str, ...], patterns: Iterable[object], defaults: bool) -> CompiledRules:
    """Compile key names and value patterns; a bad pattern raises ``ConfigurationError``."""
    rules = _RULES if defaults else ()
    branches: list[str] = []
    gates: dict[str, list[str]] = {}
    placeholders: dict[str, str] = {}
    for number, rule in enumerate(rules):
        group = rule.name if rule.name not in placeholders else f"{rule.name}_{number}"  # one name, two shapes
        branches.append(f"{rule.before}(?P<{group}>(?:{rule.secret})){rule.after}")
        placeholders[group] = pattern_placeholder(rule.name)
        for guard, branch in rule.gates:
            same_guard = gates.setdefault(guard, [])
            if branch not in same_guard:
                same_guard.append(branch)

    separate: list[tuple[re.Pattern[str], str]] = []
    for index, raw in enumerate(patterns, 1):
        name = f"custom_{index}"
        compiled = _compile_user_pattern(raw, index)
        body = _embeddable(compiled)
        try:
            embeddable = compiled.groups == 0 and re.compile(body).groups == 0
        except re.error:
            embeddable = False
        if embeddable:
            branches.append(f"(?P<{name}>{body})")
            gates.setdefault("", []).append(body)
            placeholders[name] = pattern_placeholder(name)
        else:
            separate.append((compiled, pattern_placeholder(name)))

    fields: list[str] = []
    for number, rule in enumerate(_FIELD_RULES if defaults else ()):
        group = rule.name if rule.name not in placeholders else f"{rule.name}_f{number}"
        fields.append(f"{rule.before}(?P<{group}>(?:{rule.secret})){rule.after}")
        placeholders[group] = pattern_placeholder(rule.name)

    all_gates = [branch for same_guard in gates.values() for branch in same_guard]
    user_words = [_words(key) for key in keys]
    key_words = _key_words(defaults, user_words)
    return CompiledRules(
        defaults=defaults,
        user_suffixes=tuple("".join(words) for words in user_words if words),
        user_exact=frozenset(key.casefold() for key in keys),
        key_cache={},
        prefilters=tuple((guard, re.compile("|".join(same))) for guard, same in gates.items()),
        gate=re.compile("|".join(all_gates)) if all_gates else None,
        full=re.compile("|".join(branches)) if branches else None,
        placeholders=placeholders,
        separate=tuple(separate),
        key_words=key_words,
        key_word_search=re.compile("|".join(map(re.escape, key_words))) if key_words else None,
        min_len=1 if "" in gates else _MIN_SECRET_LEN,
        fields=re.compile("|".join(fields)) if fields else None,
        field_triggers=_FIELD_TRIGGERS if defaults else (),
    )


# --- personal data (opt-in: Redactor(pii=True)) ------------------------------------------

_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<![0-9])[0-9](?:[ \-]?[0-9]){12,18}(?![0-9])")
_PHONE = re.compile(r"(?<![\w+])\+?(?:\([0-9]{1,4}\)[ .\-]?)?[0-9][0-9 .\-()]{7,18}[0-9](?![\w])")
_DATE_LIKE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
PII_NAMES: Final = ("email", "card_number", "phone")
"""Names of the opt-in personal-data patterns, as they appear in ``"[REDACTED:<name>]"``."""


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        n = ord(char) - 48
        if position % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = "".join(c for c in match.group() if c.isdigit())
    return pattern_placeholder("card_number") if 13 <= len(digits) <= 19 and _luhn(digits) else match.group()


def _phone(match: re.Match[str]) -> str:
    text = match.group()
    digits = sum(c.isdigit() for c in text)
    if "+" not in text and not any(sep in text for sep in " -.()"):
        return text  # a bare run of digits is an id, not a phone number
    if not 9 <= digits <= 15 or _DATE_LIKE.search(text) or (text.count(".") > 1 and "+" not in text):
        return text  # a date, a version or an IP address, not a phone number
    return pattern_placeholder("phone")


def redact_pii(text: str) -> str:
    """E-mail addresses, card numbers that pass the Luhn check, and phone numbers (9 to 15 digits)."""
    if "@" in text:
        text = _EMAIL.sub(pattern_placeholder("email"), text)
    if sum(c.isdigit() for c in text[:4096]) >= 9 or len(text) > 4096:
        text = _CARD.sub(_card, text)
        text = _PHONE.sub(_phone, text)
    return text
