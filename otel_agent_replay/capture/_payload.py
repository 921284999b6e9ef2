"""Big payloads: shortening over-long values so the JSON stays valid, and a content-addressed store.

A string longer than ``max_string`` characters is cut and marked with its full length
and hash, so two different long strings never shorten to the same text. A result
whose JSON is still longer than ``max_result_bytes`` is replaced by a JSON string
holding its beginning. The full value can be kept beside the tape in a folder of
files named by the sha256 of their content: names never come from the caller.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from otel_agent_replay.core import MAX_BLOB_BYTES, TapeFormatError, read_regular

from ._canonical import JSONValue

DEFAULT_MAX_STRING = 16 * 1024
DEFAULT_MAX_RESULT_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """Size caps applied at capture."""

    max_string: int = DEFAULT_MAX_STRING
    """Longest string kept whole, in characters."""
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    """Longest result JSON kept whole, in bytes."""


def _cut(text: str, limit: int) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:limit]}…[truncated {len(text)} chars sha256:{digest}]"


def shorten_strings(value: JSONValue, limit: int) -> tuple[JSONValue, bool]:
    """Cut every string longer than ``limit``; returns the value and whether anything was cut."""
    if isinstance(value, str):
        return (_cut(value, limit), True) if len(value) > limit else (value, False)
    if isinstance(value, dict):
        changed = False
        out: dict[str, JSONValue] = {}
        for k, v in value.items():
            nv, c = shorten_strings(v, limit)
            out[k] = nv
            changed |= c
        return (out, True) if changed else (value, False)
    if isinstance(value, list):
        changed = False
        items: list[JSONValue] = []
        for v in value:
            nv, c = shorten_strings(v, limit)
            items.append(nv)
            changed |= c
        return (items, True) if changed else (value, False)
    return value, False


def cap_json(text: str, limit: int) -> tuple[str, bool]:
    """Keep JSON text within ``limit`` bytes by replacing it with a JSON string of its start."""
    if len(text) <= limit // 4 or len(text.encode("utf-8")) <= limit:
        return text, False
    head = text.encode("utf-8")[:limit].decode("utf-8", "ignore")
    return orjson.dumps(f"{head}…[truncated {len(text)} chars]").decode("utf-8"), True


class BlobStore:
    """Full payloads stored as ``<sha256>.json`` files under one folder."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_for(self, sha256_hex: str) -> Path:
        """Where the payload with this hash lives; refuses anything but a sha256 hex digest."""
        if len(sha256_hex) != 64 or any(c not in "0123456789abcdef" for c in sha256_hex):
            raise ValueError(f"not a sha256 hex digest: {sha256_hex!r}")
        return self.root / f"{sha256_hex}.json"

    def put(self, text: str) -> str:
        """Store ``text`` (written atomically, once); returns its sha256 hex digest."""
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        target = self.path_for(digest)
        if target.exists():
            return digest
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, sha256_hex: str, max_bytes: int = MAX_BLOB_BYTES) -> str:
        """The stored text for a hash, checked against it before it is served.

        ``FileNotFoundError`` (a ``TapeNotFoundError``) when it was never stored; ``TapeFormatError``
        when the file is not a regular file (a link to a device), is over ``max_bytes``, or its
        content does not match its name.
        """
        path = self.path_for(sha256_hex)
        data = read_regular(str(path), "blob", max_bytes)
        if hashlib.sha256(data).hexdigest() != sha256_hex:
            raise TapeFormatError(
                "its content does not match its sha256 name, so it was changed after it was stored; "
                "delete it and re-record the tape",
                path=str(path),
            )
        return data.decode("utf-8")
