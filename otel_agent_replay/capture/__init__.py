"""Capture: from a Python value to a span attribute value (binding, canonical JSON, redaction, size caps, blobs).

The first names are the public ones (``Redactor``, ``Limits``); the rest serve the SDK's other subpackages.
"""

from __future__ import annotations

from ._canonical import (
    canonical_json,
    dumps_canonical,
    hash_text,
    key_from_json,
    normalize,
    to_jsonable,
)
from ._describe import UNNAMED, Description, class_name, describe, exception_facts
from ._keys import (
    NO_RULES,
    PRESET_TOKEN,
    VOLATILE_MODEL_FIELDS,
    VOLATILE_MODEL_RESULT_FIELDS,
    VOLATILE_RESPONSE_HEADERS,
    KeyRules,
    expand,
    without,
)
from ._payload import BlobStore, Limits
from ._pipeline import (
    DEFAULT_CAPTURE,
    Capture,
    CapturedArgs,
    CapturedResult,
    capture_args,
    capture_json,
    capture_result,
    capture_value,
    messages_json,
    usage_tokens,
)
from ._rebuild import loaded_class, rebuild_exception_as
from ._rebuilders import rebuild
from ._recorded import RecordedArgs
from ._redact import DEFAULT_REDACTOR, KEY_PLACEHOLDER, PII_NAMES, Redactor
from ._signature import Binder, bind_arguments, context_parameters, make_binder
from ._standin import MARKER, StandIns, StandInTable

__all__ = [
    "DEFAULT_CAPTURE",
    "DEFAULT_REDACTOR",
    "KEY_PLACEHOLDER",
    "MARKER",
    "NO_RULES",
    "PII_NAMES",
    "PRESET_TOKEN",
    "UNNAMED",
    "VOLATILE_MODEL_FIELDS",
    "VOLATILE_MODEL_RESULT_FIELDS",
    "VOLATILE_RESPONSE_HEADERS",
    "Binder",
    "BlobStore",
    "Capture",
    "CapturedArgs",
    "CapturedResult",
    "Description",
    "KeyRules",
    "Limits",
    "RecordedArgs",
    "Redactor",
    "StandInTable",
    "StandIns",
    "bind_arguments",
    "canonical_json",
    "capture_args",
    "capture_json",
    "capture_result",
    "capture_value",
    "class_name",
    "context_parameters",
    "describe",
    "dumps_canonical",
    "exception_facts",
    "expand",
    "hash_text",
    "key_from_json",
    "loaded_class",
    "make_binder",
    "messages_json",
    "normalize",
    "rebuild",
    "rebuild_exception_as",
    "to_jsonable",
    "usage_tokens",
    "without",
]
