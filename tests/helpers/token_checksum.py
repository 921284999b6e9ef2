"""The checksum GitHub's tokens end with (CRC-32 of the rest, six base-62 digits): the tests' own oracle,
written from the published format, not taken from the package under test."""

from __future__ import annotations

import string
import zlib

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def crc_base62(text: str) -> str:
    """CRC-32 of ``text`` as six base-62 digits, most significant first."""
    crc, out = zlib.crc32(text.encode()), ""
    for _ in range(6):
        crc, rest = divmod(crc, 62)
        out = BASE62[rest] + out
    return out
