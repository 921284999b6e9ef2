"""Credential context: the value that a name calls a credential is one, whatever it looks like.

Found in text, in the syntaxes that tools return and print:

- ``name: value`` and ``name = value`` (YAML, INI, TOML, ``.env`` and ``export``, Python and JSON in
  prose, Django's ``SECRET_KEY = '...'``, ``--password=x``), with the value quoted, in parentheses (a
  repr's tuple), or bare up to the next space or delimiter;
- header lines (``X-Vault-Token: ...``, ``DD-API-KEY: ...``, ``Authorization: SSWS ...``): a
  hyphenated name, or ``authorization``/``cookie``, takes the rest of the line;
- URL parameters (``?code=``, ``&auth=``, ``&hmac=``, ``?key=``, ``&sig=``): these names count only
  after ``?``, ``&``, ``;`` or ``#``;
- ``.netrc`` (``password x`` where the text has ``machine`` or ``login``) and ``--password x``;
- ``.pgpass`` lines (``host:port:db:user:password``);
- XML elements (``<password>x</password>``; attributes are ``name="value"`` above);
- ``--user user:password`` and ``-u user:password``;
- ``Basic <base64>`` wherever it stands (a sentence, a log line), when the base64 decodes to ``user:password``.

A name is a credential by the rules that decide secret dict keys (``_redact_rules``), plus the words
``signature``, ``sig``, ``hmac`` and ``authkey``, and a name of two or more words whose last is ``key``,
``secret`` or ``token`` (``signing_key``, ``Ocp-Apim-Subscription-Key``) unless a word says it is data
(``sort_key``, ``cache_key``, ``public_key``, ``Idempotency-Key``: ``_DATA_KEY_WORDS``). Values that hold
nothing (``null``, ``None``, ``true``, ``false``, empty, a placeholder) are left, and so is a number of up
to six digits under a name that may be a count (``token: 5``). ``context_spans`` gives (start, end) of each value.
"""

from __future__ import annotations

import base64
import re
from typing import Final

from ._redact_rules import is_default_secret_name

__all__ = ["TRIGGERS", "context_spans", "is_credential_name"]

TRIGGERS: Final = (
    "pass",
    "pwd",
    "secret",
    "key",
    "token",
    "auth",
    "cred",
    "cookie",
    "session",
    "sig",
    "hmac",
    "code",
    "basic",
)
"""Every credential name contains one of these, lower-cased (and ``basic`` starts a ``Basic <base64>`` credential)."""

_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_MAX_NAME: Final = 64
_TEXT_ONLY_WORDS: Final = ("signature", "sig", "hmac", "authkey", "ssws")
_URL_ONLY: Final = frozenset({"code", "key", "auth", "sig", "signature", "hmac", "apikey", "k"})
_LINE_NAMES: Final = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_EMPTY: Final = frozenset({"", "null", "none", "nil", "true", "false", "undefined", "''", '""'})
_PASSWORDISH: Final = ("pass", "pwd", "secret", "pin")
# A name of two or more words ending in one of these is a credential's (``signing_key``, ``Ocp-Apim-Subscription-Key``,
# ``X-Custom-Token``, ``webhookSecret``) unless another of its words says the key is data: a row's, a cache's, a
# message's, a page's key, a public key, a WebSocket handshake's nonce, an idempotency key.
_NAMED_LAST: Final = frozenset({"key", "secret", "token"})
_DATA_KEY_WORDS: Final = frozenset(
    {
        "primary",
        "foreign",
        "sort",
        "partition",
        "cluster",
        "clustering",
        "cache",
        "idempotency",
        "dedup",
        "dedupe",
        "deduplication",
        "public",
        "pub",
        "object",
        "s",  # s3_key: an object's path
        "dict",
        "group",
        "call",
        "map",
        "hash",
        "row",
        "lookup",
        "unique",
        "composite",
        "shard",
        "routing",
        "index",
        "sec",
        "web",
        "socket",
        "natural",
        "surrogate",
        "join",
        "bucket",
        "cursor",
        "page",
        "next",
        "continuation",
        "pagination",
        "sync",
        "range",
        "translation",
        "i18n",
        "message",
        "label",
        "column",
        "field",
        "schema",
        "table",
        "record",
        "entry",
        "item",
        "node",
        "tree",
        "metric",
        "event",
        "trace",
        "span",
        "tag",
        "meta",
        "metadata",
        "max",
        "min",
        "count",
        "input",
        "output",
        "prompt",
        "completion",
        "total",
    }
)
# ``Basic <base64 of user:password>`` anywhere (a sentence, a log line, an event's attribute): decoded to be sure.
_BASIC = re.compile(r"(?<![A-Za-z0-9_\-])(?i:basic)[ \t]+(?P<basic>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=_\-])")

# After a name: an optional closing quote (a JSON or repr key), the separator, the value.
_ASSIGN = re.compile(
    r"""(?P<nq>["']?)[ \t]*(?P<sep>:|=>|=)[ \t]*"""
    r"""(?:"(?P<dq>[^"\r\n]*)"|'(?P<sq>[^'\r\n]*)'|\\"(?P<eq>[^"\\\r\n]*)\\"|\((?P<paren>[^)\r\n]*)\)"""
    r"""|(?P<bare>[^\s,;&'"<>\]\)}]+))"""
)
_LINE_VALUE = re.compile(r"""[ \t]*:[ \t]*(?P<line>[^\s'"][^\r\n'"]*)""")
_SPACED = re.compile(r"""[ \t]+(?P<word>[^\s'"]+)""")
_XML_VALUE = re.compile(r"""(?:\s[^<>]*)?>(?P<xml>[^<]+)</""")
_PGPASS = re.compile(
    # the fields hold no quote or comma, so a timestamp inside JSON ("…T00:00:00Z","k":"","x":true) is not one
    r"(?:^|(?<=[\s\"'=]))[^:\s#\"',]+:(?:[0-9]{1,5}|\*):[^:\s\"',]+:[^:\s\"',]+:(?P<pgpass>[^\s\"',]+)(?=$|[\s\"'])",
    re.MULTILINE,
)
_PGPASS_HINT = re.compile(r":(?:[0-9]{1,5}|\*):")
_USER_OPTION = re.compile(r"""(?:--user|(?<!\S)-u)(?:[ \t]+|=)['"]?[^\s:'"]+:(?P<upass>[^\s'"]+)""")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_credential_name(name: str, in_url: bool = False) -> bool:
    """Whether ``name`` calls its value a credential (``in_url``: a URL parameter's name)."""
    lowered = name.lower()
    if in_url and lowered in _URL_ONLY:
        return True
    if is_default_secret_name(name):
        return True
    all_words = [word.lower() for word in _WORDS.findall(name)]
    words = list(all_words)
    while words and words[-1].isdigit():  # X-Hub-Signature-256
        words.pop()
    if "".join(words).endswith(_TEXT_ONLY_WORDS):
        return True
    if len(words) >= 2 and words[-1] in _NAMED_LAST and _DATA_KEY_WORDS.isdisjoint(words):
        return True
    return len(words) < len(all_words) and is_default_secret_name("_".join(words))


def _empty(value: str, name: str) -> bool:
    stripped = value.strip()
    if stripped.lower() in _EMPTY or "[REDACTED" in stripped or stripped.startswith(("${", "{{", "<", "*", "[")):
        return True
    if stripped.isdigit() and len(stripped) <= 6:
        return not any(word in name.lower() for word in _PASSWORDISH)  # "token: 5" is a count
    return False


def _name_at(text: str, at: int) -> tuple[int, int]:
    """The name around position ``at`` (a trigger word inside it)."""
    start = at
    while start > 0 and text[start - 1] in _NAME_CHARS and at - start < _MAX_NAME:
        start -= 1
    end = at
    size = len(text)
    while end < size and text[end] in _NAME_CHARS and end - start < _MAX_NAME:
        end += 1
    while start < end and text[start] in "-.":  # --password, .password
        start += 1
    return start, end


def _value_span(text: str, start: int, end: int, netrc: bool) -> tuple[int, int] | None:
    """The span of the value named by ``text[start:end]``, or None."""
    name = text[start:end]
    before = text[start - 1] if start > 0 else ""
    in_url = before in "?&;#"
    in_xml = before == "<"
    if not is_credential_name(name, in_url):
        return None
    if in_xml:
        found = _XML_VALUE.match(text, end)
        return found.span("xml") if found else None
    if "-" in name or name.lower() in _LINE_NAMES:  # a header line: the rest of the line
        line = _LINE_VALUE.match(text, end)
        if line is not None:
            return None if _empty(line.group("line"), name) else line.span("line")
    found = _ASSIGN.match(text, end)
    if found is not None:
        group = found.lastgroup
        if group is not None and group not in ("nq", "sep") and not _empty(found.group(group), name):
            return found.span(group)
        return None
    dashes = text[max(0, start - 2) : start] == "--"
    if netrc or dashes:  # "password x" in a .netrc, "--password x" on a command line
        spaced = _SPACED.match(text, end)
        if spaced and not _empty(spaced.group("word"), name):
            return spaced.span("word")
    return None


def context_spans(text: str, lowered: str | None = None) -> list[tuple[int, int]]:
    """The (start, end) of each credential value named in ``text``."""
    if lowered is None:
        lowered = text.lower()
    spans: list[tuple[int, int]] = []
    seen: set[int] = set()
    netrc = "machine" in lowered or "login" in lowered
    for word in TRIGGERS:
        at = lowered.find(word)
        while at >= 0:
            start, end = _name_at(text, at)
            if start not in seen:
                seen.add(start)
                span = _value_span(text, start, end, netrc)
                if span is not None and span[1] > span[0]:
                    spans.append(span)
            at = lowered.find(word, max(at + 1, end))
    if ":" in text and _PGPASS_HINT.search(text):
        spans.extend(match.span("pgpass") for match in _PGPASS.finditer(text) if "[REDACTED" not in match.group())
    if "-u" in text:
        spans.extend(match.span("upass") for match in _USER_OPTION.finditer(text) if "[REDACTED" not in match.group())
    if "basic" in lowered:
        spans.extend(match.span("basic") for match in _BASIC.finditer(text) if _user_password(match.group("basic")))
    return spans


def _user_password(token: str) -> bool:
    """Whether ``token`` is the base64 of printable ``user:password`` (what ``Basic`` carries)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    _, colon, password = decoded.partition(":")
    return bool(colon and password) and decoded.isprintable()
