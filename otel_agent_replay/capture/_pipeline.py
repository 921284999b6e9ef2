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
    canonical_value,
    dumps_canonical,
    json_text,
    key_from_json,
    native_json_text,
    normalize,
    plain_json_text,
    to_jsonable,
)
from ._describe import describe, plain_json_names
from ._jsontext import has_escaped_quote
from ._keys import NO_RULES, KeyRules
from ._payload import BlobStore, Limits, cap_json, shorten_strings
from ._recorded import RecordedArgs
from ._redact import DEFAULT_REDACTOR, Redactor
from ._standin import StandIns, StandInTable


@dataclass(frozen=True, slots=True)
class Capture:
    """How values are captured: redaction, size caps, and where full payloads go."""

    redactor: Redactor = DEFAULT_REDACTOR
    limits: Limits = field(default_factory=Limits)
    blobs: BlobStore | None = None
    keys: KeyRules = NO_RULES
    """Paths left out of call keys, per tool (``key_ignore``)."""
    stand_ins: StandIns | None = None
    """A recording's stand-ins: what a redacted secret becomes on its tape (None: the marker stays)."""
    known: StandInTable | None = None
    """A replayed tape's stand-ins: a live value holding one (echoed from a recorded result) is keyed as the
    recorded call was, on the marker it stands for."""
    recorded: RecordedArgs | None = None
    """A replayed tape's recorded argument texts: a live call whose canonical text is one of them is keyed
    without redacting it again (``_recorded``: redaction gives such a text back unchanged)."""


DEFAULT_CAPTURE = Capture()


@dataclass(frozen=True, slots=True)
class CapturedArgs:
    """Arguments ready for a span: canonical redacted JSON and the call key."""

    json: str
    call_key: str
    value: JSONValue
    key_ignore: tuple[str, ...] = ()
    """The paths left out of the call key (the tape keeps them in the arguments)."""
    stand_ins: Mapping[str, str] = field(default_factory=dict)
    """The stand-ins ``json`` holds and the markers they stand for (the call key is computed on those)."""


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
    stand_ins: Mapping[str, str] = field(default_factory=dict)
    """The stand-ins ``json`` holds and the markers they stand for."""


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
    """Canonical, redacted arguments and their call key (without the paths the key rules leave out).

    The call key is computed on the redacted form (markers); the JSON the tape carries has the
    recording's stand-ins in their place (``Capture.stand_ins``). A replay's call whose canonical text is
    one the tape recorded (``Capture.recorded``) is not redacted again: redaction would give it back."""
    value = canonical_value(bound)
    text = dumps_canonical(value)
    recorded = capture.recorded
    on_tape = recorded is not None and text in recorded
    if capture.known:
        restored = capture.known.restore_json(text)
        if restored != text:
            text, value = restored, orjson.loads(restored)
    redacted = text if on_tape else _redacted_args(capture.redactor, text)
    shown: JSONValue = None
    made: dict[str, str] = {}
    if redacted is not text:
        original = value
        text = redacted
        value = orjson.loads(text)
        if capture.stand_ins is not None:
            shown = capture.stand_ins.value(original, value, made)
    limit = capture.limits.max_string
    if len(text) > limit:
        value, cut = shorten_strings(value, limit)
        if cut:
            text = dumps_canonical(value)
        if made:
            shown, _ = shorten_strings(shown, limit)
    shown_text = text if not made else dumps_canonical(shown)
    shown_value = value if not made else shown
    if key_ignore or capture.keys:
        patterns = capture.keys.for_tool(tool, key_ignore)
        if patterns:
            return CapturedArgs(shown_text, capture.keys.key(tool, value, patterns), shown_value, patterns, made)
    return CapturedArgs(shown_text, key_from_json(tool, text), shown_value, stand_ins=made)


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
    # orjson's own path first (the usual result); the hook and non-string keys only when it refuses the value
    text = plain_json_text(result)
    if text is None:
        text = native_json_text(result)
    # None: not plain JSON (or not as orjson writes it: integers beyond 64 bits), so its type is described
    names = None if text is None else plain_json_names(result)
    if text is None:
        text = json_text(result)
    full = redacted_json(result, capture, names, text)
    made: dict[str, str] = {}
    if full is not text and capture.stand_ins is not None:
        shown = capture.stand_ins.value(orjson.loads(text), orjson.loads(full), made)
        if made:
            full = orjson.dumps(shown).decode("utf-8")
    desc, lossy = describe(result) if names is None else (None, [])
    type_json = None if desc is None else orjson.dumps(desc).decode("utf-8")
    limits = capture.limits
    if len(full) <= limits.max_string or _no_long_string(full, limits.max_string):
        if len(full) <= limits.max_result_bytes:
            return CapturedResult(full, None, False, type_json, tuple(lossy), made)
        short, cut = None, False
    else:
        short, cut = shorten_strings(orjson.loads(full), limits.max_string)
    text = orjson.dumps(short).decode("utf-8") if cut else full
    text, capped = cap_json(text, limits.max_result_bytes)
    if not (cut or capped):
        return CapturedResult(full, None, False, type_json, tuple(lossy), made)
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()
    if capture.blobs is not None:
        capture.blobs.put(full)
    return CapturedResult(text, digest, True, type_json, tuple(lossy), made)


def _no_long_string(text: str, limit: int) -> bool:
    """Whether no string of compact JSON ``text`` can be longer than ``limit`` (no stretch between two quotes
    is); text with escaped quotes is not decided here (False), as a string may then span several stretches."""
    if has_escaped_quote(text):
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
