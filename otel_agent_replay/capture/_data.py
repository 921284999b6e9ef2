"""Data is not a secret: the shapes of public values that look random and that an agent needs back unchanged.

Each rule checks the value's own encoding, not only its look, so a random key that happens to resemble one
is still judged by entropy:

- public keys and certificates: a PEM block whose label is not a private key's (``CERTIFICATE``,
  ``PUBLIC KEY``, ``SSH2 PUBLIC KEY`` ...); base64 DER whose outer SEQUENCE starts with a SEQUENCE (a
  SubjectPublicKeyInfo or a certificate; a private key starts with its version INTEGER) and holds no
  PKCS#5 encryption identifier; an OpenSSH public key blob (``AAAA…`` that decodes to a length-prefixed
  ``ssh-…``/``ecdsa-…``/``sk-…`` name);
- content digests and integrity strings: an algorithm name (``sha256-``, ``sha384-``, ``sha512-``, ``md5-``
  …) then base64 that decodes to that many bytes (SRI ``integrity``, ``Digest:`` headers);
- content ids: CIDv0 (``Qm`` + 44 base58) and CIDv1 in base32 (``b…`` decoding to version 1);
- blockchain addresses: Bitcoin base58check (its double-SHA-256 checksum verified) and bech32/bech32m
  (its BCH checksum verified), Ethereum ``0x`` + 40 (an address) or 64 (a transaction hash) hex digits;
- object ids under a vendor's prefix (payments, files, vector stores, messages, runs: ``pi_…``,
  ``cs_test_…``, ``file-…``, ``vs_…``, ``msg_…`` …) of up to 64 letters and digits after the prefix;
- base64 media of any format: a base64 body of 256 characters or more (192 bytes: larger than any key a
  format does not name), or one whose bytes begin with a known file signature.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Final

__all__ = ["is_data", "public_pem_spans"]

_PUBLIC_PEM = re.compile(
    r"-----BEGIN (?P<label>(?:(?!PRIVATE)[A-Z0-9 ])+)-----(?:.|\n)*?-----END (?P=label)-----", re.DOTALL
)
_DIGEST_NAMES: Final = {
    "md5": 16,
    "sha1": 20,
    "sha224": 28,
    "sha256": 32,
    "sha384": 48,
    "sha512": 64,
    "blake2b": 64,
    "blake2s": 32,
    "blake3": 32,
}
_DIGEST = re.compile(
    r"(?P<alg>md5|sha1|sha224|sha256|sha384|sha512|blake2[bs]|blake3)[-=:_](?P<b64>[A-Za-z0-9+/_\-]+=*)"
)
_ETH = re.compile(r"0x(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})")
_CID0 = re.compile(r"Qm[1-9A-HJ-NP-Za-km-z]{44}")
_CID1 = re.compile(r"b[a-z2-7]{50,}")
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]{25,35}")
_BECH32 = re.compile(r"(?P<hrp>bc|tb|ltc|bcrt)1(?P<data>[02-9ac-hj-np-z]{8,87})", re.IGNORECASE)
_BECH32_CHARS = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_BASE64_BODY = re.compile(r"[A-Za-z0-9+/_\-]+=*")
_OBJECT_PREFIXES: Final = (
    # Stripe
    "pi|pm|ch|py|cus|in|ii|il|sub|si|prod|price|plan|evt|txn|re|po|tr|seti|src|acct|ba|card|cs_test|cs_live"
    "|pi_test|plink|prc|promo|coupon|inv|bpc|cbtxn|ic|ipi|setatt|mandate|ich|cn|dp|du|fr|iauth|ipi|or"
    # OpenAI, Anthropic and other model APIs
    "|file|vs|vsfile|asst|thread|run|step|msg|msgbatch|batch|ftjob|ft|ftckpt|chatcmpl|resp|toolu|srvtoolu|conv"
    "|item|rs|fc|call|req|ws|org|proj|user|upload|part|cmpl|modr|eval|evalrun|trace|span|ctc|mcp|ig"
)
# (not "fc-": Firecrawl's keys are fc- then 32 hex digits; OpenAI's function-call ids are fc_...)
_OBJECT_ID = re.compile(rf"(?!fc-)(?:{_OBJECT_PREFIXES})[_-][A-Za-z0-9]{{8,64}}")
_MEDIA_MIN: Final = 256
_SIGNATURES: Final = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"RIFF",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"ID3",
    b"\xff\xfb",
    b"\xff\xf3",
    b"OggS",
    b"fLaC",
    b"\x1aE\xdf\xa3",
    b"II*\x00",
    b"MM\x00*",
    b"wOFF",
    b"wOF2",
    b"\x00\x00\x01\x00",
    b"BZh",
    b"\xfd7zXZ",
    b"7z\xbc\xaf",
    b"Rar!",
    b"(\xb5/\xfd",
    b"\x00asm",
    b"MThd",
    b"FORM",
    b"caff",
    b"SQLite format 3",
)
_PKCS5: Final = bytes.fromhex("2a864886f70d0105")


def _b64(text: str) -> bytes | None:
    body = text.rstrip("=")
    if len(body) % 4 == 1:
        return None
    alt = b"-_" if ("-" in body or "_" in body) else None
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), altchars=alt, validate=True)
    except (binascii.Error, ValueError):
        return None


def _der_length(raw: bytes, at: int) -> tuple[int, int] | None:
    """(length, where the content starts) of the DER element whose length octets start at ``at``."""
    if at >= len(raw):
        return None
    first = raw[at]
    if first < 0x80:
        return first, at + 1
    count = first & 0x7F
    if count == 0 or count > 4 or at + 1 + count > len(raw):
        return None
    return int.from_bytes(raw[at + 1 : at + 1 + count], "big"), at + 1 + count


def _public_der(raw: bytes) -> bool:
    if len(raw) < 32 or raw[0] != 0x30:
        return False
    outer = _der_length(raw, 1)
    if outer is None or outer[1] >= len(raw):
        return False
    return raw[outer[1]] == 0x30 and _PKCS5 not in raw[:64]


def _ssh_blob(raw: bytes) -> bool:
    if len(raw) < 12:
        return False
    size = int.from_bytes(raw[:4], "big")
    return 7 <= size <= 64 and raw[4 : 4 + size].startswith((b"ssh-", b"ecdsa-", b"sk-"))


def _base58check(text: str) -> bool:
    number = 0
    for char in text:
        number = number * 58 + _B58.index(char)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    raw = b"\x00" * (len(text) - len(text.lstrip("1"))) + raw
    if len(raw) < 5:
        return False
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


def _bech32(hrp: str, data: str) -> bool:
    values = [_BECH32_CHARS.index(c) for c in data.lower()]
    check = 1
    for value in [ord(c) >> 5 for c in hrp.lower()] + [0] + [ord(c) & 31 for c in hrp.lower()] + values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for n, gen in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            if (top >> n) & 1:
                check ^= gen
    return check in (1, 0x2BC830A3)  # bech32, bech32m


def _cid1(text: str) -> bool:
    body = text[1:].upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except (binascii.Error, ValueError):
        return False
    return len(raw) > 4 and raw[0] == 0x01


def media(text: str) -> bool:
    """Whether ``text`` is base64 of a file: long enough to be data, or starting with a known signature."""
    if len(text) >= _MEDIA_MIN and _BASE64_BODY.fullmatch(text):
        return True
    head = text[:24]
    raw = _b64(head[: len(head) // 4 * 4])
    return raw is not None and (raw.startswith(_SIGNATURES) or raw[4:8] == b"ftyp")


def is_data(token: str) -> bool:
    """Whether a run that may look like a key is one of the public values of this module's docstring."""
    if _ETH.fullmatch(token) or _OBJECT_ID.fullmatch(token):
        return True
    found = _DIGEST.fullmatch(token)
    if found is not None:
        raw = _b64(found.group("b64"))
        if raw is not None and len(raw) == _DIGEST_NAMES[found.group("alg")]:
            return True
    if _CID0.fullmatch(token) or (_CID1.fullmatch(token) and _cid1(token)):
        return True
    if _BASE58.fullmatch(token) and token[0] in "13mn2" and _base58check(token):
        return True
    found = _BECH32.fullmatch(token)
    if found is not None and _bech32(found.group("hrp"), found.group("data")):
        return True
    if media(token):
        return True
    if token.startswith(("M", "AAAA")):  # DER's SEQUENCE tag 0x30 is base64 "M"
        raw = _b64(token)
        if raw is not None and (_public_der(raw) or _ssh_blob(raw)):
            return True
    return False


def public_pem_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a PEM block that is not a private key's (a certificate, a public key)."""
    if "-----BEGIN " not in text:
        return []
    return [match.span() for match in _PUBLIC_PEM.finditer(text)]
