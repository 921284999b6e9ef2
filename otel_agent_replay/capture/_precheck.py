"""The cheap pre-check of redaction: can redacting some compact JSON text change anything at all?

Capture asks it before walking a value (``Redactor.may_redact``), so a large clean value costs one
look at its text instead of a walk. False only when nothing would change: no hit of the three layers'
gate (``_layers``) or of a value pattern's prefilter, no ``$bytes``, no field-rule trigger, and no
name the walk would take for a secret key. Names are the ones given (``plain_json_names`` of the same
data), else found in the text itself (a key is a string followed by ``:``, a header-pair name a string
between ``[`` and ``,``); text with escaped quotes (JSON inside strings), name/value pair objects, or
many strings falls back to looking for the secret key words anywhere in it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from ._layers import may_hold_json
from ._redact_rules import CompiledRules
from ._scan import fields_hit

__all__ = ["keys_hit", "may_redact", "secret_key"]

# may_redact: up to this length the word scan is cheaper than walking the strings.
_SHORT_TEXT: Final = 256
# may_redact: above this many strings the word scan is cheaper than walking them.
_MANY_STRINGS: Final = 96
# may_redact with names: above this many, the names are scanned for key words together first.
_MANY_NAMES: Final = 256
# A header-pair name longer than this is checked with the word scan instead of as a key.
_LONG_NAME: Final = 64
# Objects with these fields may be name/value pairs ({"name": "Authorization", "value": ...}).
_PAIR_NAME_FIELDS: Final = frozenset({"name", "key", "Name", "Key"})
# Decided keys kept per rule set: bounded, since keys may be data (ids, URLs).
_KEY_CACHE_SIZE: Final = 8192


def secret_key(compiled: CompiledRules, key: str) -> bool:
    """Whether ``key`` names a secret under these rules (decided once, then cached)."""
    cache = compiled.key_cache
    secret = cache.get(key)
    if secret is None:
        secret = compiled.decide(key)
        if len(cache) >= _KEY_CACHE_SIZE:
            cache.clear()
        cache[key] = secret
    return secret


def may_redact(compiled: CompiledRules, json_text: str, names: Collection[str] | None) -> bool:
    """False only if redacting the data of ``json_text`` with these rules would change nothing."""
    if compiled.defaults and may_hold_json(json_text):  # the three layers' gate (_layers)
        return True
    if any(guard in json_text and gate.search(json_text) is not None for guard, gate in compiled.prefilters):
        return True
    if ("$" in json_text and '"$bytes"' in json_text) or fields_hit(compiled, json_text):
        return True
    return keys_hit(compiled, json_text, names)


def keys_hit(
    compiled: CompiledRules, json_text: str, names: Collection[str] | None, *, trust_names: bool = False
) -> bool:
    """Whether the data of ``json_text`` may hold a name the walk takes for a secret key (a superset).

    ``trust_names``: the caller knows no string holds JSON, so ``names`` are all the names there are."""
    if not compiled.key_words:
        return False
    if names is not None and (
        trust_names or "\\" not in json_text
    ):  # no escape, so no JSON inside a string (whose keys count too)
        return _names_hit(compiled, names)
    if len(json_text) <= _SHORT_TEXT:  # small arguments: the word scan is cheaper than the key walk
        return _has_key_word(compiled, json_text)
    found = _scan_keys(compiled, json_text) if json_text.count('"') <= 2 * _MANY_STRINGS else None
    return _has_key_word(compiled, json_text) if found is None else found


def _scan_keys(compiled: CompiledRules, text: str) -> bool | None:
    """Walk the strings of compact JSON text, deciding keys and header-pair names.

    True: one of them is secret; False: none is; None: the text needs the word scan
    (many strings, escaped quotes — JSON inside a string —, name/value pair objects).
    """
    find = text.find
    pos = 0
    for _ in range(_MANY_STRINGS):
        start = find('"', pos)
        if start < 0:
            return False
        end = find('"', start + 1)
        if end < 0:
            return None
        if text[end - 1] == "\\":
            return None  # an escaped quote: JSON inside a string, or a quote in a key
        after = text[end + 1 : end + 2]
        if after == ":" or (after == "," and text[start - 1 : start] == "["):
            name = text[start + 1 : end]
            if after == ":" and name in _PAIR_NAME_FIELDS:
                return None
            if len(name) > _LONG_NAME:
                if _has_key_word(compiled, name):
                    return True
            else:
                if secret_key(compiled, name):
                    return True
        pos = end + 1
    return None


def _names_hit(compiled: CompiledRules, names: Collection[str]) -> bool:
    if len(names) > _MANY_NAMES:
        # Many distinct names (ids as keys): one scan of them all first; only the names that hold a
        # key word (a superset of the secret ones) are decided one by one.
        joined = "\n".join(names)
        if not _has_key_word(compiled, joined):
            return False
        search = compiled.key_word_search
        if search is not None:
            names = [name for name in names if search.search(name.lower()) is not None]
    for name in names:
        if len(name) > _LONG_NAME:
            if _has_key_word(compiled, name):
                return True
            continue
        if secret_key(compiled, name):
            return True
    return False


def _has_key_word(compiled: CompiledRules, text: str) -> bool:
    lowered = text.lower()
    search = compiled.key_word_search
    if search is not None and len(lowered) <= _SHORT_TEXT:
        return search.search(lowered) is not None
    return any(word in lowered for word in compiled.key_words)
