"""Turning call arguments and results into span attribute values.

Order matters and is the same at record and replay: bind to the signature, make
JSON-able, normalise (arguments only), redact, shorten, dump. Redaction happens before
any value reaches a span attribute.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._canonical import (
    JSONValue,
    dumps_canonical,
    json_text,
    key_from_json,
    native_json_text,
    normalize,
    to_jsonable,
)
from ._describe import describe, plain_json_names
from ._keys import NO_RULES, KeyRules
from ._payload import BlobStore, Limits, cap_json, shorten_strings
from ._redact import DEFAULT_REDACTOR, Redactor


@dataclass(frozen=True, slots=True)
class Capture:
    """How values are captured: redaction, size caps, and where full payloads go."""

    redactor: Redactor = DEFAULT_REDACTOR
    limits: Limits = field(default_factory=Limits)
    blobs: BlobStore | None = None
    keys: KeyRules = NO_RULES
    """Paths left out of call keys, per tool (``key_ignore``)."""


DEFAULT_CAPTURE = Capture()


@dataclass(frozen=True, slots=True)
class CapturedArgs:
    """Arguments ready for a span: canonical redacted JSON and the call key."""

    json: str
    call_key: str
    value: JSONValue
    key_ignore: tuple[str, ...] = ()
    """The paths left out of the call key (the tape keeps them in the arguments)."""


@dataclass(frozen=True, slots=True)
class CapturedResult:
    """A result ready for a span."""

    json: str
    sha256: str | None
    """sha256 of the full redacted JSON, when the result was shortened."""
    truncated: bool
    type_json: str | None = None
    """The result's type description as JSON (``rebuild.describe``), None for plain JSON."""
    lossy: tuple[str, ...] = ()
    """Types in the result that cannot come back from the tape as themselves."""


_MEMO_CHARS = 1024
_MEMO_ENTRIES = 2048
_redacted_memo: dict[tuple[Redactor, str], str] = {}


def _redacted_args(redactor: Redactor, text: str) -> str:
    """``redactor.redact_json(text, canonical=True)``, remembered for short texts.

    The same short arguments recur call after call (an HTTP GET's query, a tool's id): their one-pass
    scan is paid once. Only for a redactor without processors (user code, which may not give the same
    answer twice). The memo is bounded (cleared when full) and lives in the process's memory only, as
    the arguments themselves do: nothing of it is written anywhere.
    """
    if len(text) > _MEMO_CHARS or redactor.processors:
        return redactor.redact_json(text, canonical=True)
    memo_key = (redactor, text)
    found = _redacted_memo.get(memo_key)
    if found is None:
        found = redactor.redact_json(text, canonical=True)
        if len(_redacted_memo) >= _MEMO_ENTRIES:
            _redacted_memo.clear()
        _redacted_memo[memo_key] = found
    return text if found == text else found


def capture_args(
    tool: str, bound: Mapping[str, Any], capture: Capture, key_ignore: tuple[str, ...] = ()
) -> CapturedArgs:
    """Canonical, redacted arguments and their call key (without the paths the key rules leave out)."""
    value = normalize(to_jsonable(bound))
    text = dumps_canonical(value)
    redacted = _redacted_args(capture.redactor, text)
    if redacted is not text:
        text = redacted
        value = orjson.loads(text)
    if len(text) > capture.limits.max_string:
        value, cut = shorten_strings(value, capture.limits.max_string)
        if cut:
            text = dumps_canonical(value)
    if key_ignore or capture.keys:
        patterns = capture.keys.for_tool(tool, key_ignore)
        if patterns:
            return CapturedArgs(text, capture.keys.key(tool, value, patterns), value, patterns)
    return CapturedArgs(json=text, call_key=key_from_json(tool, text), value=value)


def capture_value(value: object, capture: Capture) -> JSONValue:
    """A value made JSON-able and redacted."""
    return capture.redactor(to_jsonable(value))


def capture_json(value: object, capture: Capture, *, canonical: bool = False) -> str:
    """A value (a run's input or output) as redacted JSON; canonical when asked."""
    if canonical:
        return dumps_canonical(capture.redactor(normalize(to_jsonable(value))))
    return redacted_json(value, capture)


def redacted_json(
    value: object, capture: Capture, names: Collection[str] | None = None, text: str | None = None
) -> str:
    """The redacted JSON text of a value, not normalised (a result is given back as it was).

    One pass over the dumped text (``Redactor.redact_json``); only the strings that hold a finding
    are decided and written back, and only data whose structure matters is parsed and walked.
    ``names``: ``plain_json_names(value)``, and ``text``: ``json_text(value)``, when known.
    """
    if text is None:
        text = json_text(value)
    return capture.redactor.redact_json(text, names)


def capture_result(result: object, capture: Capture) -> CapturedResult:
    """Redacted result JSON, shortened when over the caps.

    Only a shortened result carries ``sha256`` (of the full redacted JSON); then, when a
    blob store is configured, the full redacted JSON is stored there under that hash.
    """
    text = native_json_text(result)
    # None: not plain JSON (or not as orjson writes it: integers beyond 64 bits), so its type is described
    names = None if text is None else plain_json_names(result)
    full = redacted_json(result, capture, names, text)
    desc, lossy = describe(result) if names is None else (None, [])
    type_json = None if desc is None else orjson.dumps(desc).decode("utf-8")
    limits = capture.limits
    if len(full) <= limits.max_string or _no_long_string(full, limits.max_string):
        if len(full) <= limits.max_result_bytes:
            return CapturedResult(full, None, False, type_json, tuple(lossy))
        short, cut = None, False
    else:
        short, cut = shorten_strings(orjson.loads(full), limits.max_string)
    text = orjson.dumps(short).decode("utf-8") if cut else full
    text, capped = cap_json(text, limits.max_result_bytes)
    if not (cut or capped):
        return CapturedResult(full, None, False, type_json, tuple(lossy))
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()
    if capture.blobs is not None:
        capture.blobs.put(full)
    return CapturedResult(text, digest, True, type_json, tuple(lossy))


def _no_long_string(text: str, limit: int) -> bool:
    """Whether no string of compact JSON ``text`` can be longer than ``limit`` (no stretch between two quotes
    is); text with escaped quotes is not decided here (False), as a string may then span several stretches."""
    if '\\"' in text:
        return False
    # A stretch longer than ``limit`` holds a whole window of ``limit // 2`` characters starting at a multiple
    # of it: when every such window has a quote, no stretch is that long (a few ``find``s, no split of the text).
    half = max(1, limit // 2)
    find = text.find
    for start in range(0, len(text) - half + 1, half):
        if find('"', start, start + half) < 0:
            return max(map(len, text.split('"'))) <= limit
    return True


def usage_tokens(result: object) -> tuple[int | None, int | None]:
    """Token usage from a model result's ``usage`` (mapping or attribute).

    Reads ``input_tokens``/``output_tokens``, else ``prompt_tokens``/``completion_tokens``.
    """
    usage = result.get("usage") if isinstance(result, Mapping) else getattr(result, "usage", None)
    if usage is None:
        return None, None

    def read(*names: str) -> int | None:
        for name in names:
            v = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return None

    return read("input_tokens", "prompt_tokens"), read("output_tokens", "completion_tokens")


def messages_json(value: JSONValue) -> str | None:
    """JSON of the messages a model call's arguments or result carry, if any."""
    if isinstance(value, dict):
        for key in ("messages", "choices", "output"):
            found = value.get(key)
            if isinstance(found, list):
                return orjson.dumps(found).decode("utf-8")
    return None
