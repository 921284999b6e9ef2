"""Content codings undone before a body is scanned or kept: gzip, deflate, br and zstd.

A server may send its answer compressed (``Content-Encoding``); the tape keeps the body the client
reads, so it is scanned for secrets as the JSON or text it is (compressed bytes under base64 would
hide every secret and every difference) and replays with no coding to undo. ``decode(content,
encoding)`` undoes each coding of the header, the last applied first (``gzip, br``), with the
libraries the clients themselves decode with: ``zlib`` for gzip and deflate (a zlib stream or a raw
one, as servers send both), ``brotli`` (or ``brotlicffi``) for br, ``zstandard`` for zstd (every frame
of a multi-frame body). A coding it does not know, or bytes that do not decode, leave the body as it
came, with ``False``: the caller keeps its coding.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["decode"]


def _gzip(content: bytes) -> bytes:
    out = b""
    while content:  # members one after another are one body (RFC 1952)
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += inflater.decompress(content) + inflater.flush()
        content = inflater.unused_data
    return out


def _deflate(content: bytes) -> bytes:
    try:
        return zlib.decompress(content)
    except zlib.error:
        return zlib.decompress(content, -zlib.MAX_WBITS)  # a raw deflate stream without its zlib header


def _module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _brotli(content: bytes) -> bytes:
    module = _module("brotli", "brotlicffi")
    if module is None:
        raise LookupError("br")
    return bytes(module.decompress(content))


def _zstd(content: bytes) -> bytes:
    module = _module("zstandard")
    if module is None:
        raise LookupError("zstd")
    out = b""
    while content:  # a body may be several frames
        decompressor = module.ZstdDecompressor().decompressobj()
        out += decompressor.decompress(content)
        content = decompressor.unused_data
    return out


_DECODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": _gzip,
    "x-gzip": _gzip,
    "deflate": _deflate,
    "br": _brotli,
    "zstd": _zstd,
}


def decode(content: bytes, encoding: str) -> tuple[bytes, bool]:
    """``content`` without the content codings ``encoding`` names (and whether they were all undone)."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip().lower() != "identity"]
    body = content
    for coding in reversed(codings):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            return content, False
        try:
            body = decoder(body)
        except Exception:  # a broken body, or no library for it: kept as it came, with its coding
            return content, False
    return body, True
