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
- ``--user user:password`` and ``-u user:password``.

A name is a credential by the rules that decide secret dict keys (``_redact_rules``), plus the words
``signature``, ``sig``, ``hmac`` and ``authkey``. Values that hold nothing (``null``, ``None``,
``true``, ``false``, empty, a placeholder) are left, and so is a number of up to six digits under a
name that may be a count (``token: 5``). ``context_spans`` gives (start, end) of each value.
"""

from __future__ import annotations

import re
from typing import Final

from ._redact_rules import is_default_secret_name

__all__ = ["TRIGGERS", "context_spans", "is_credential_name"]

TRIGGERS: Final = ("pass", "pwd", "secret", "key", "token", "auth", "cred", "cookie", "session", "sig", "hmac", "code")
"""Every credential name contains one of these, lower-cased."""

_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_MAX_NAME: Final = 64
_TEXT_ONLY_WORDS: Final = ("signature", "sig", "hmac", "authkey", "ssws")
_URL_ONLY: Final = frozenset({"code", "key", "auth", "sig", "signature", "hmac", "apikey", "k"})
_LINE_NAMES: Final = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_EMPTY: Final = frozenset({"", "null", "none", "nil", "true", "false", "undefined", "''", '""'})
_PASSWORDISH: Final = ("pass", "pwd", "secret", "pin")

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
    return spans
