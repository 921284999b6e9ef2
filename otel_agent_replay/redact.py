"""Redaction at capture: secrets are removed from JSON data before it reaches any span attribute.

A ``Redactor`` takes JSON data (the output of ``canonical.to_jsonable``) and returns a
redacted copy. Three built-in passes run, then the user's processors:

1. **Secret keys.** A dict key that names a secret (``password``, ``api_key``,
   ``accessToken``, ``X-Api-Key``, ``Set-Cookie``, ...), at any depth and in any case or
   spelling, keeps its key while its value, whatever its type, becomes ``"[REDACTED]"``.
   Count-like keys (``max_tokens``, ``input_tokens``, ``token_count``, ``session_count``)
   are not secrets: model arguments and usage survive. A value of None stays None (it
   holds nothing, and ``canonical_json`` drops None-valued keys).
2. **Header lists.** In a list of pairs (``[["Authorization", "Bearer x"], ...]``) or of
   ``{"name": ..., "value": ...}`` / ``{"key": ..., "value": ...}`` entries, the value of a
   pair whose name is a secret key becomes ``"[REDACTED]"``; the name is kept.
3. **Value patterns.** Inside every string value, well-known token shapes (AWS, GitHub,
   GitLab, OpenAI, Anthropic, Slack, Google, Stripe, JWT, ``Bearer <token>``, PEM private
   keys, ``user:pass@`` in URLs, ``token=...``-style parameters) are replaced by
   ``"[REDACTED:<name>]"`` and the rest of the string is kept. A string that is itself a
   JSON object or array (a tool that returns ``json.dumps(...)``) is parsed and redacted
   as data; it is re-serialised (compactly, by orjson) only when something was redacted.

Placeholders are fixed strings, so redacting the same value twice gives the same result
(redaction is idempotent) and a call key computed over redacted arguments is the same at
record and at replay.

Redaction never breaks the agent and fails closed: if a processor raises, the whole value
becomes ``"[REDACTED:processor_error]"`` (and ``"[REDACTED:redaction_error]"`` if the
built-in passes ever fail); nested deeper than 100 levels becomes ``"[REDACTED:too_deep]"``.
Only the exception's type is logged, never its message, which may quote the secret.

Known limits: dict keys are never scanned for value patterns; a bearer token is recognised
in free text only when it holds a digit or is at least 20 characters long (so prose such as
"a bearer token" is left alone), and only spelled ``Bearer``, ``bearer`` or ``BEARER``;
free-text ``Basic`` credentials and header lines (``Authorization: ...`` inside a string)
are not recognised. Under a secret key or header name every value is redacted.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, TypeAlias

import orjson

from otel_agent_replay.canonical import JSONValue, to_jsonable
from otel_agent_replay.errors import ConfigurationError

__all__ = [
    "DEFAULT_REDACTOR",
    "KEY_PLACEHOLDER",
    "PATTERN_NAMES",
    "RedactionProcessor",
    "Redactor",
    "pattern_placeholder",
]

_log = logging.getLogger(__name__)

RedactionProcessor: TypeAlias = Callable[[JSONValue], JSONValue]
"""A plain callable, structlog style: takes JSON data and returns new JSON data."""

KEY_PLACEHOLDER: Final = "[REDACTED]"
"""What the value of a secret key (or secret header) becomes."""


def pattern_placeholder(name: str) -> str:
    """What a secret found by a value pattern becomes: ``"[REDACTED:<name>]"``."""
    return f"[REDACTED:{name}]"


_MAX_DEPTH: Final = 100
_KEY_CACHE_SIZE: Final = 8192
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
_SECRET_WORDS: Final = frozenset({"jwt", "jwts", "creds", "sessionid", "sessionkey"})
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


def _words(key: str) -> tuple[str, ...]:
    return tuple(word.lower() for word in _SEGMENT.findall(key))


def _is_default_secret(words: tuple[str, ...]) -> bool:
    if words[-1] == "auth":  # requests/httpx style auth=(user, password), basic_auth, proxy_auth
        return True
    counting = not _COUNT_WORDS.isdisjoint(words)
    joined = ""
    for word in words:
        joined += word
        if word in _SECRET_WORDS or joined.endswith(_SECRET_SUFFIXES):
            return True
        if not counting and (word == "session" or joined.endswith("token")):
            return True
    return False


def _ends_with_any(words: tuple[str, ...], suffixes: tuple[str, ...]) -> bool:
    joined = ""
    for word in words:
        joined += word
        if joined.endswith(suffixes):
            return True
    return False


# --- value patterns ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    """One value pattern: ``before`` and ``after`` are kept, ``secret`` is replaced.

    ``gates`` are (guard, branch) pairs for the prefilter. Every branch starts with a
    literal character that lies in the first ``_MAX_ANCHOR_OFFSET + 1`` characters of any
    match of the rule, and matches wherever the rule can match; the guard is one
    character every match contains, checked first with a plain ``in`` (memchr).
    """

    name: str
    secret: str
    gates: tuple[tuple[str, str], ...]
    before: str = ""
    after: str = ""


_MAX_ANCHOR_OFFSET: Final = 6  # "github_pat_": the gate anchors on the "_" after "github"

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
        "url_credentials",
        # No "[" in the user part, so a redacted URL does not match again.
        r"[^\s/@:\[\]]*:[^\s/@]+",
        (("@", r"://[^\s/@:\[\]]*:[^\s/@]+@"),),
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

PATTERN_NAMES: Final = tuple(rule.name for rule in _RULES)
"""Names of the built-in value patterns, as they appear in ``"[REDACTED:<name>]"``."""

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


@dataclass(frozen=True, slots=True)
class _Compiled:
    defaults: bool
    user_suffixes: tuple[str, ...]
    user_exact: frozenset[str]
    key_cache: dict[str, bool]
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
    key_words: tuple[str, ...]
    """Every secret key name contains one of these, lower-cased (a superset)."""

    def decide(self, key: str) -> bool:
        if key.casefold() in self.user_exact:
            return True
        words = _words(key)
        if not words:
            return False
        if self.defaults and _is_default_secret(words):
            return True
        return bool(self.user_suffixes) and _ends_with_any(words, self.user_suffixes)


def _compile(keys: tuple[str, ...], patterns: Iterable[object], defaults: bool) -> _Compiled:
    rules = _RULES if defaults else ()
    branches: list[str] = []
    gates: dict[str, list[str]] = {}
    placeholders: dict[str, str] = {}
    for rule in rules:
        branches.append(f"{rule.before}(?P<{rule.name}>(?:{rule.secret})){rule.after}")
        placeholders[rule.name] = pattern_placeholder(rule.name)
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

    all_gates = [branch for same_guard in gates.values() for branch in same_guard]
    user_words = [_words(key) for key in keys]
    return _Compiled(
        defaults=defaults,
        user_suffixes=tuple("".join(words) for words in user_words if words),
        user_exact=frozenset(key.casefold() for key in keys),
        key_cache={},
        prefilters=tuple((guard, re.compile("|".join(same))) for guard, same in gates.items()),
        gate=re.compile("|".join(all_gates)) if all_gates else None,
        full=re.compile("|".join(branches)) if branches else None,
        placeholders=placeholders,
        separate=tuple(separate),
        key_words=_key_words(defaults, user_words),
        min_len=1 if "" in gates else _MIN_SECRET_LEN,
    )


# Every default secret key, in any spelling the key rules accept, contains one of these
# when lower-cased ("pass" covers password, passwd, passphrase; "cred" credential(s) and
# creds; "key" api/private/access keys). A few plain substring checks cost far less
# than one case-insensitive alternation over the same text.
_DEFAULT_KEY_WORDS: Final = ("pass", "secret", "auth", "cookie", "cred", "token", "jwt", "session", "key")


def _key_words(defaults: bool, user_words: list[tuple[str, ...]]) -> tuple[str, ...]:
    found = list(_DEFAULT_KEY_WORDS) if defaults else []
    # A key ending in a user key's words contains that key's last word.
    found.extend(words[-1] for words in user_words if words)
    return tuple(dict.fromkeys(found))


def _substitute(pattern: re.Pattern[str], placeholder: str, text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        return placeholder if match.end() > match.start() else ""

    return pattern.sub(replace, text)


# --- the redactor ---------------------------------------------------------------------


@dataclass(frozen=True)
class Redactor:
    """Removes secrets from JSON data; call it on a value to get a redacted copy.

    ``keys`` adds secret key names, matched like the defaults (case and separators
    ignored, so ``"customer_ssn"`` also matches ``customerSSN``). ``patterns`` adds value
    regexes (str or compiled); a match becomes ``"[REDACTED:custom_<n>]"``, ``n`` counting
    from 1 in the order given. ``processors`` run in order after the built-in passes and
    their return value is used. ``defaults=False`` turns off the built-in key names and
    value patterns (header lists still follow ``keys``).

    Invalid patterns raise ``ConfigurationError`` here, at construction, never later while
    redacting. The instance is immutable and hashable; everything is compiled once.
    """

    keys: tuple[str, ...] = ()
    patterns: tuple[str | re.Pattern[str], ...] = ()
    processors: tuple[RedactionProcessor, ...] = ()
    defaults: bool = True
    _compiled: _Compiled = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        keys = tuple(self.keys)
        for key in keys:
            if not isinstance(key, str):
                raise ConfigurationError(f"Redactor key {key!r} is a {type(key).__name__}; pass key names as str.")
        processors = tuple(self.processors)
        for processor in processors:
            if not callable(processor):
                raise ConfigurationError(
                    f"Redactor processor {processor!r} is not callable; pass functions that take "
                    "JSON data and return JSON data."
                )
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "patterns", tuple(self.patterns))
        object.__setattr__(self, "processors", processors)
        object.__setattr__(self, "_compiled", _compile(keys, self.patterns, self.defaults))

    def __call__(self, value: JSONValue) -> JSONValue:
        """Return a redacted copy of ``value``.

        Containers are always new (the input is never mutated nor aliased); strings with
        nothing to redact are the same objects. Never raises: see the module docstring
        for how failures fail closed.
        """
        try:
            data = self._walk(value, 0)
        except Exception as exc:  # fail closed: a redaction bug must neither leak nor raise
            _log.warning("redaction failed (%s); the value was replaced", type(exc).__name__)
            return pattern_placeholder("redaction_error")
        for processor in self.processors:
            try:
                data = processor(data)
            except Exception as exc:
                _log.warning(
                    "redaction processor %s raised %s; the value was replaced",
                    getattr(processor, "__qualname__", type(processor).__qualname__),
                    type(exc).__name__,
                )
                return pattern_placeholder("processor_error")
        return data

    def redact_text(self, text: str) -> str:
        """Apply the value patterns (only) to one string; returns ``text`` itself if clean."""
        return self._scan(text)

    def may_redact(self, json_text: str) -> bool:
        """Cheap check on the JSON text of some data: False only if redacting it would change nothing.

        Lets capture skip the walk over a large clean value. Conservative: with user
        patterns or processors (which may do anything) it always says True.
        """
        if self.patterns or self.processors:
            return True
        compiled = self._compiled
        if compiled.key_words:
            lowered = json_text.lower()
            if any(word in lowered for word in compiled.key_words):
                return True
        return any(guard in json_text and gate.search(json_text) is not None for guard, gate in compiled.prefilters)

    def is_secret_key(self, key: str) -> bool:
        """Whether ``key`` names a secret (used for dict keys and header names)."""
        cache = self._compiled.key_cache
        secret = cache.get(key)
        if secret is None:
            secret = self._compiled.decide(key)
            if len(cache) >= _KEY_CACHE_SIZE:
                cache.clear()  # bounded: keys may be data (ids, URLs)
            cache[key] = secret
        return secret

    # --- walking JSON data -----------------------------------------------------------

    def _walk(self, value: JSONValue, depth: int) -> JSONValue:
        kind = type(value)
        if kind is str:
            return self._string(value, depth)
        if kind is dict:
            return self._dict(value, depth)
        if kind is list or kind is tuple:
            return self._list(value, depth)
        if value is None or kind is int or kind is float or kind is bool:
            return value
        return self._odd(value, depth)

    def _odd(self, value: object, depth: int) -> JSONValue:
        if isinstance(value, enum.Enum) or not isinstance(value, (str, int, float)):
            if depth > _MAX_DEPTH:
                return pattern_placeholder("too_deep")
            # Not JSON data after all: serialise it by the project's one rule, then redact.
            return self._walk(to_jsonable(value), depth + 1)
        if isinstance(value, str):
            return self._string(str.__str__(value), depth)
        return value  # int and float subclasses hold no text

    def _dict(self, value: dict[object, JSONValue], depth: int) -> JSONValue:
        if depth > _MAX_DEPTH:
            return pattern_placeholder("too_deep")
        cache = self._compiled.key_cache
        out: dict[object, JSONValue] = {}
        for key, item in value.items():
            if type(key) is str:
                secret = cache.get(key)
                if secret is None:
                    secret = self.is_secret_key(key)
            else:
                secret = isinstance(key, str) and self.is_secret_key(key)
            if secret:
                out[key] = None if item is None else KEY_PLACEHOLDER
            else:
                out[key] = self._walk(item, depth + 1)
        if "value" in value or "Value" in value:
            # {"name": "Authorization", "value": "..."}: HAR headers, k8s env, AWS tags.
            for name_field in ("name", "key", "Name", "Key"):
                name = value.get(name_field)
                if isinstance(name, str):
                    if self.is_secret_key(name):
                        for value_field in ("value", "Value"):
                            if out.get(value_field) is not None:
                                out[value_field] = KEY_PLACEHOLDER
                    break
        return out

    def _list(self, value: list[JSONValue] | tuple[JSONValue, ...], depth: int) -> JSONValue:
        if depth > _MAX_DEPTH:
            return pattern_placeholder("too_deep")
        out: list[JSONValue] = []
        append = out.append
        for item in value:
            kind = type(item)
            if (kind is list or kind is tuple) and len(item) == 2:
                name = item[0]
                if isinstance(name, str) and self.is_secret_key(name):
                    # ["Authorization", "Bearer ..."]: a header pair
                    append([name, None if item[1] is None else KEY_PLACEHOLDER])
                    continue
            append(self._walk(item, depth + 1))
        return out

    def _string(self, text: str, depth: int) -> JSONValue:
        if (
            len(text) > 1
            and text[0] in "{["
            and text[-1] in "}]"
            and not text.startswith("[REDACTED")
            and depth <= _MAX_DEPTH
        ):
            try:
                parsed = orjson.loads(text)
            except orjson.JSONDecodeError:
                pass
            else:
                redacted = self._walk(parsed, depth + 1)
                if redacted == parsed:
                    return text
                return orjson.dumps(redacted).decode("utf-8")
        return self._scan(text)

    # --- scanning strings ------------------------------------------------------------

    def _scan(self, text: str) -> str:
        compiled = self._compiled
        if len(text) >= compiled.min_len:
            for guard, prefilter in compiled.prefilters:
                if guard in text and prefilter.search(text) is not None:
                    text = self._replace(text)
                    break
        for pattern, placeholder in compiled.separate:
            if pattern.search(text) is not None:
                text = _substitute(pattern, placeholder, text)
        return text

    def _replace(self, text: str) -> str:
        compiled = self._compiled
        gate, full = compiled.gate, compiled.full
        if gate is None or full is None:
            return text
        parts: list[str] = []
        copied = 0  # text[:copied] is in parts
        pos = 0  # every position before pos has been tried as the start of a match
        end = len(text)
        while pos < end:
            hit = gate.search(text, pos)
            if hit is None:
                break
            anchor = hit.start()
            # A match starts at most _MAX_ANCHOR_OFFSET characters before its anchor, so
            # trying those few positions finds the leftmost match, as finditer would,
            # without running the full alternation at every position of the string.
            start = max(pos, anchor - _MAX_ANCHOR_OFFSET)
            match = None
            while start <= anchor:
                match = full.match(text, start)
                if match is not None and match.end() > match.start():
                    break
                match = None
                start += 1
            if match is None:
                pos = anchor + 1
                continue
            name = match.lastgroup
            if name is None:  # every branch has one named group; kept for safety
                secret_start, secret_end = match.span()
                placeholder = pattern_placeholder("secret")
            else:
                secret_start, secret_end = match.span(name)
                placeholder = compiled.placeholders[name]
            parts.append(text[copied:secret_start])
            parts.append(placeholder)
            copied = secret_end
            pos = match.end()
        if not parts:
            return text
        parts.append(text[copied:])
        return "".join(parts)


DEFAULT_REDACTOR: Final = Redactor()
"""The redactor used when none is configured: default keys and patterns, no extras."""
