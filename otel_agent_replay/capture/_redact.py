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
   GitLab, OpenAI, Anthropic, Slack tokens and webhook URLs, Google, Stripe, SendGrid, npm,
   PyPI, Hugging Face, JWT, ``Bearer <token>``, PEM private keys, ``user:pass@`` in URLs,
   ``token=...``-style parameters with Azure's ``AccountKey=``/``SharedAccessKey=``, npm's
   ``_authToken=``, ``session=``/``sid=``, ``aws_secret_access_key = ...``) are replaced by
   ``"[REDACTED:<name>]"`` and the rest of the string is kept. Then the **field rules**: a
   secret named in free text, as a header line (``Authorization: Basic ...``, ``Cookie: ...``,
   ``X-API-Key: ...``) or a quoted field (``{'password': '...'}`` in an exception's repr,
   ``password='...'`` in a call's repr, ``"api_key": "..."`` in prose), tried only at the
   positions before a trigger word (``pass``, ``key``, ``token`` ...). A string that is itself a
   JSON object or array (a tool that returns ``json.dumps(...)``) is parsed and redacted
   as data; it is re-serialised (compactly, by orjson) only when something was redacted.
   Dict keys (and so ``**kwargs`` names) are scanned too: a key that held a secret is
   replaced and its value redacted. ``{"$bytes": base64}`` (bytes) is decoded and its text
   redacted before it is encoded again. ``pii=True`` adds e-mail addresses, Luhn-checked card
   numbers and phone numbers.

Placeholders are fixed strings, so redacting the same value twice gives the same result
(redaction is idempotent) and a call key computed over redacted arguments is the same at
record and at replay.

Redaction never breaks the agent and fails closed: if a processor raises, the whole value
becomes ``"[REDACTED:processor_error]"`` (and ``"[REDACTED:redaction_error]"`` if the
built-in passes ever fail); nested deeper than 100 levels becomes ``"[REDACTED:too_deep]"``.
Only the exception's type is logged, never its message, which may quote the secret.

After those passes every string goes through the contract's three layers (``_layers``): the
maintained detector (Kingfisher's rules), credential context in text (YAML, INI, ``.env``,
``.netrc``, ``.pgpass``, XML, header lines, URL parameters, ``--user``), and high-entropy tokens
(identifiers are kept by the rules in ``_entropy``; a value under an identifier key skips that
layer), and its decoded forms (URL-encoded, HTML-escaped, base64 text) through all three again.
Lists that look like streams are also read as one text (``_stream``). ``secret_kinds`` names what
redaction would remove (for reports), ``redact_header`` redacts one HTTP header (for HTTP capture).

Known limits: a secret of no format the rule set knows, named by nothing around it and without the
entropy of a key (a dictionary-word password in prose, a letters-only token, a bare hex key) cannot
be seen; binary bytes that are not UTF-8 text are kept as they are; personal data is redacted only
with ``pii=True``. Under a secret key or header name every value is redacted.

The rules themselves (secret key names, value patterns and their compilation) are in
``_redact_rules``, the scanning of one string in ``_scan``; this module walks JSON data, decides
keys; the cheap pre-check (``may_redact``) is ``_precheck``'s.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import logging
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final

import orjson

from otel_agent_replay.core import ConfigurationError

from ._canonical import JSONValue, to_jsonable
from ._context import is_credential_name
from ._entropy import is_identifier_key
from ._onepass import redact_json
from ._precheck import may_redact, secret_key
from ._processors import RedactionProcessor, run_processors
from ._redact_rules import (
    PATTERN_NAMES,
    PII_NAMES,
    CompiledRules,
    compile_rules,
    pattern_placeholder,
)
from ._scan import scan_text
from ._stream import assemble, is_stream, sse_data, sse_text

__all__ = [
    "DEFAULT_REDACTOR",
    "KEY_PLACEHOLDER",
    "PATTERN_NAMES",
    "PII_NAMES",
    "RedactionProcessor",
    "Redactor",
    "pattern_placeholder",
]

_log = logging.getLogger("otel_agent_replay.redact")

KEY_PLACEHOLDER: Final = "[REDACTED]"
"""What the value of a secret key (or secret header) becomes."""

_MAX_DEPTH: Final = 100
_PLACEHOLDERS: Final = re.compile(r"\[REDACTED(?::([A-Za-z0-9_]+))?\]")


# --- the redactor ---------------------------------------------------------------------


@dataclass(frozen=True)
class Redactor:
    """Removes secrets from JSON data; call it on a value to get a redacted copy.

    ``keys`` adds secret key names, matched like the defaults (case and separators
    ignored, so ``"customer_ssn"`` also matches ``customerSSN``). ``patterns`` adds value
    regexes (str or compiled); a match becomes ``"[REDACTED:custom_<n>]"``, ``n`` counting
    from 1 in the order given. ``processors`` run in order after the built-in passes and
    their return value is used. ``defaults=False`` turns off the built-in key names and
    value patterns (header lists still follow ``keys``). ``pii=True`` also removes personal data
    from strings: e-mail addresses, card numbers that pass the Luhn check, and phone numbers
    (``"[REDACTED:email]"``, ``"[REDACTED:card_number]"``, ``"[REDACTED:phone]"``); it is off by
    default because it changes ordinary data (and so call keys).

    Invalid patterns raise ``ConfigurationError`` here, at construction, never later while
    redacting. The instance is immutable and hashable; everything is compiled once.
    """

    keys: tuple[str, ...] = ()
    patterns: tuple[str | re.Pattern[str], ...] = ()
    processors: tuple[RedactionProcessor, ...] = ()
    defaults: bool = True
    pii: bool = False
    _compiled: CompiledRules = field(init=False, repr=False, compare=False, hash=False)
    _warned: set[int] = field(init=False, repr=False, compare=False, hash=False)

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
        object.__setattr__(self, "_compiled", compile_rules(keys, self.patterns, self.defaults))
        object.__setattr__(self, "_warned", set())

    @functools.cached_property
    def without_processors(self) -> Redactor:
        """This redactor without the user's processors: what the tape's own structure (schema version,
        ids, kinds, side effects, call keys) is read with, so a processor sees values only."""
        if not self.processors:
            return self
        return dataclasses.replace(self, processors=())

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
        return self._processed(data)

    def redact_attribute(self, key: str, text: str) -> JSONValue:
        """A string attribute value (a span's or a resource's) under its key: as ``self(text)``, except
        that a key naming an identifier (``order_id``, ``service.instance.id``) or a resource's identity
        (``service.name``, ``host.name``, ``k8s.pod.name`` …) keeps the value from the high-entropy layer,
        as the walk does for a value under an id key. (A secret key is the caller's to decide first.)"""
        if not is_identifier_key(key):
            return self(text)
        try:
            data: JSONValue = scan_text(self._compiled, text, self.pii, entropy=False)
        except Exception as exc:  # fail closed, as __call__
            _log.warning("redaction failed (%s); the value was replaced", type(exc).__name__)
            return pattern_placeholder("redaction_error")
        return self._processed(data)

    def _processed(self, data: JSONValue) -> JSONValue:
        """``data`` through the user's processors (each must give back JSON data)."""
        return run_processors(self.processors, data, self._warned) if self.processors else data

    def secret_kinds(self, value: JSONValue) -> tuple[str, ...]:
        """The kinds of secret redaction would remove from ``value`` (``"github_token"``, ``"credential"``,
        ``"high_entropy"``, ``"secret_key"`` for a value under a secret key ...), sorted; empty when clean.

        For reports (``check``): they can say what was found and where without ever printing it.
        """
        redacted = self(value)
        if redacted == value:
            return ()
        before = Counter(_PLACEHOLDERS.findall(orjson.dumps(value).decode("utf-8")))
        after = Counter(_PLACEHOLDERS.findall(orjson.dumps(redacted).decode("utf-8")))
        kinds = {"secret_key" if kind == "" else kind for kind in (after - before)}
        return tuple(sorted(kinds)) or ("secret",)

    def redact_header(self, name: str, value: str) -> str:
        """One HTTP header's value as it may be recorded (a public entry point for HTTP capture).

        The whole value becomes ``"[REDACTED]"`` when the name is a secret key or names a credential
        (``Authorization``, ``Cookie``, ``x-goog-api-key``, ``X-Amz-Security-Token``, ``X-Vault-Token``,
        ``X-Hub-Signature-256`` ...); any other value has every secret in it redacted like a string.
        """
        if self.is_secret_key(name) or (self.defaults and is_credential_name(name)):
            return KEY_PLACEHOLDER
        return self.redact_text(value)

    def redact_text(self, text: str, key: str = "") -> str:
        """Apply the value patterns (only) to one string; returns ``text`` itself if clean. ``key``: the
        name the string is under, if any; one naming an identifier or a resource's identity
        (``is_identifier_key``) keeps the string from the high-entropy layer."""
        return scan_text(self._compiled, text, self.pii, entropy=not (key and is_identifier_key(key)))

    def redact_json(self, json_text: str, names: Collection[str] | None = None, *, canonical: bool = False) -> str:
        """The compact JSON text of some data (as orjson writes it), redacted; ``json_text`` itself if clean.

        One pass over the text (``_onepass``): the detector, the value patterns' prefilters, the credential
        words and the high-entropy runs are found in the whole text at once; only the strings that hold a
        finding are decided and written back in place. Data whose structure matters (a secret key name,
        bytes, JSON inside a string, a stream; user patterns, processors, personal data) is walked as
        ``self(value)`` does. ``names``: as for ``may_redact``. ``canonical``: the text has sorted keys
        (``dumps_canonical``), and a walked value is written back so."""
        if not (self.patterns or self.processors or self.pii):
            try:
                out = redact_json(self._compiled, json_text, names)
            except Exception as exc:  # fail closed: the walk below decides (and itself fails closed)
                _log.warning("one-pass redaction failed (%s); the value is walked", type(exc).__name__)
                out = None
            if out is not None:
                return out
        redacted = self(orjson.loads(json_text))
        if canonical:
            return orjson.dumps(redacted, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        return orjson.dumps(redacted).decode("utf-8")

    def may_redact(self, json_text: str, names: Collection[str] | None = None) -> bool:
        """Cheap check on the compact JSON text of some data: False only if redacting it would change nothing.

        Lets capture skip the walk over a large clean value. Conservative: with user patterns or
        processors (which may do anything) it always says True. ``names``: the names the walk would
        test as keys (``plain_json_names`` of the same data), when known. How: ``_precheck``.
        """
        if self.patterns or self.processors or self.pii:
            return True
        return may_redact(self._compiled, json_text, names)

    def is_secret_key(self, key: str) -> bool:
        """Whether ``key`` names a secret (used for dict keys and header names)."""
        return secret_key(self._compiled, key)

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
                continue
            if type(key) is str and len(key) >= self._compiled.min_len:
                # a secret in a key (a token as a dict key, a **kwargs name)
                clean = scan_text(self._compiled, key, self.pii)
                if clean != key:
                    # the placeholder names a secret ("[REDACTED:github_token]"), so a second pass would
                    # take the key for a secret key: redact its value now, and redaction stays idempotent
                    out[clean] = None if item is None else KEY_PLACEHOLDER
                    continue
            if key == "$bytes" and type(item) is str:
                out[key] = self._bytes(item, depth)
            elif type(item) is str and type(key) is str and is_identifier_key(key):
                # an identifier the agent needs back: every layer but the high-entropy one
                out[key] = scan_text(self._compiled, item, self.pii, entropy=False)
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

    def _bytes(self, encoded: str, depth: int) -> str:
        """``{"$bytes": base64}``: the bytes as text are redacted like a string (base64 hides every pattern)."""
        try:
            text = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return encoded  # binary data: no text to redact
        redacted = self._string(text, depth)
        if redacted == text:
            return encoded
        return base64.b64encode(str(redacted).encode("utf-8")).decode("ascii")

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
        if len(out) > 1 and self._compiled.defaults and is_stream(out):
            assemble(out, self._scan_whole)  # a stream: its chunks read as one text
        return out

    def _scan_whole(self, text: str) -> str:
        return scan_text(self._compiled, text, self.pii)

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
        if text.startswith(("data:", "event:", "id:")) and depth <= _MAX_DEPTH:
            event = sse_data(text)  # an event stream's event: its JSON data is redacted as data
            if event is not None:
                lines, index, data = event
                redacted = self._walk(data, depth + 1)
                if redacted == data:
                    return scan_text(self._compiled, text, self.pii) if self._sse_rest(lines, index) else text
                return sse_text(lines, index, redacted)
        return scan_text(self._compiled, text, self.pii)

    def _sse_rest(self, lines: list[str], index: int) -> bool:
        """Whether the lines of an event other than its data may hold something (event names, ids)."""
        return any(n != index and line for n, line in enumerate(lines))


DEFAULT_REDACTOR: Final = Redactor()
"""The redactor used when none is configured: default keys and patterns, no extras."""
