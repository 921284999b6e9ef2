"""The redaction rules: which keys name secrets, which value shapes are secrets.

``compile_rules`` turns a ``Redactor``'s configuration (extra key names, extra value
patterns, whether the defaults apply) into one ``CompiledRules``: the key-name decision,
the value patterns joined into a single alternation with their prefilter gates, and the
cheap key words ``Redactor.may_redact`` looks for. The value patterns themselves are in
``_value_patterns``; the walk over JSON data is ``_redact``, the scan of one string ``_scan``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from otel_agent_replay.core import ConfigurationError

from ._value_patterns import FIELD_LOOKBACK, FIELD_RULES, FIELD_TRIGGERS, MAX_ANCHOR_OFFSET, PATTERN_NAMES, RULES

__all__ = [
    "FIELD_LOOKBACK",
    "MAX_ANCHOR_OFFSET",
    "PATTERN_NAMES",
    "PII_NAMES",
    "CompiledRules",
    "compile_rules",
    "is_default_secret_name",
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
    "authkey",
    # keys that are credentials by what they key (issue 30): data names (sort_key, public_key, primary_key,
    # partition_key, cache_key, Idempotency-Key, key_id) are not here and stay data
    "signingkey",
    "signingkeys",
    "encryptionkey",
    "decryptionkey",
    "masterkey",
    "hmackey",
    "sharedkey",
    "sshkey",
    "deploykey",
    "licensekey",
    "subscriptionkey",
    "accountkey",
    "storagekey",
    "servicekey",
    "clientkey",
    "webhookkey",
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
        # a page token is the position of the next page, not a credential (nextPageToken, next_page_token)
        "page",
        "continuation",
        "pagination",
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


def is_default_secret_name(key: str) -> bool:
    """Whether ``key`` names a secret by the built-in rules alone (no user keys)."""
    words = _words(key)
    return bool(words) and _is_default_secret(words)


def _key_words(defaults: bool, user_words: list[tuple[str, ...]]) -> tuple[str, ...]:
    found = list(_DEFAULT_KEY_WORDS) if defaults else []
    # A key ending in a user key's words contains that key's last word.
    found.extend(words[-1] for words in user_words if words)
    return tuple(dict.fromkeys(found))


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
    line_cache: dict[tuple[str, bool], str]
    """``_linewise`` remembers its lines' decisions here (escaped JSON text -> redacted, or "" when clean)."""
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
    """The field rules in one alternation (None without the defaults); see ``FIELD_RULES``."""
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
    rules = RULES if defaults else ()
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
    for number, rule in enumerate(FIELD_RULES if defaults else ()):
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
        line_cache={},
        prefilters=tuple((guard, re.compile("|".join(same))) for guard, same in gates.items()),
        gate=re.compile("|".join(all_gates)) if all_gates else None,
        full=re.compile("|".join(branches)) if branches else None,
        placeholders=placeholders,
        separate=tuple(separate),
        key_words=key_words,
        key_word_search=re.compile("|".join(map(re.escape, key_words))) if key_words else None,
        min_len=1 if "" in gates else _MIN_SECRET_LEN,
        fields=re.compile("|".join(fields)) if fields else None,
        field_triggers=FIELD_TRIGGERS if defaults else (),
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
