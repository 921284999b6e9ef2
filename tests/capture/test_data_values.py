"""Data is not a secret: public keys and certificates, digests and integrity strings, content ids, blockchain
addresses, vendor object ids, page tokens and base64 media, all generated here from their real encodings (key
pairs and certificates by ``cryptography``, digests by ``hashlib``, addresses by their checksums), come back
unchanged through a tape and a replay, as an argument, in a result and in free text."""

from __future__ import annotations

import base64
import datetime
import hashlib
import random
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from otel_agent_replay import agent_run, load_tape, record, replay, tool

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
RNG = random.Random(30)


def _base58check(payload: bytes) -> str:
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number, out = int.from_bytes(raw, "big"), ""
    while number:
        number, digit = divmod(number, 58)
        out = _B58[digit] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def _polymod(values: list[int]) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for i, gen in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            check ^= gen if (top >> i) & 1 else 0
    return check


def _bech32(hrp: str, version: int, program: bytes) -> str:
    acc, bits, data = 0, 0, [version]
    for byte in program:
        acc, bits = (acc << 8) | byte, bits + 8
        while bits >= 5:
            bits -= 5
            data.append((acc >> bits) & 31)
    if bits:
        data.append((acc << (5 - bits)) & 31)
    const = 1 if version == 0 else 0x2BC830A3
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    mod = _polymod(expanded + data + [0] * 6) ^ const
    return hrp + "1" + "".join(_BECH[d] for d in data + [(mod >> 5 * (5 - i)) & 31 for i in range(6)])


def _certificate() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"svc-{RNG.randint(1, 999)}.example.com")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(RNG.getrandbits(64))
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _values() -> list[str]:
    out: list[str] = []
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    ed = ed25519.Ed25519PrivateKey.generate().public_key()
    ecc = ec.generate_private_key(ec.SECP256R1()).public_key()
    for key in (rsa_key, ed, ecc):
        out.append(
            key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        )
        der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        out.append(base64.b64encode(der).decode())
    for key in (rsa_key, ed, ecc):
        out.append(key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode())
    out += [_certificate(), _certificate()]
    for _ in range(2):
        body = RNG.randbytes(64)
        for alg in ("sha256", "sha384", "sha512"):
            out.append(f"{alg}-{base64.b64encode(hashlib.new(alg, body).digest()).decode()}")
        out.append(hashlib.sha256(body).hexdigest())
    for _ in range(3):  # CIDv0: base58 of the sha2-256 multihash; CIDv1: "b" + base32 of version 1, raw codec
        digest = hashlib.sha256(RNG.randbytes(32)).digest()
        number, cid0 = int.from_bytes(b"\x12\x20" + digest, "big"), ""
        while number:
            number, d = divmod(number, 58)
            cid0 = _B58[d] + cid0
        out.append(cid0)
        out.append("b" + base64.b32encode(b"\x01\x55\x12\x20" + digest).decode().lower().rstrip("="))
    for _ in range(3):  # Bitcoin P2PKH, P2SH, segwit v0 and taproot; Ethereum addresses and tx hashes
        out.append(_base58check(b"\x00" + RNG.randbytes(20)))
        out.append(_base58check(b"\x05" + RNG.randbytes(20)))
        out.append(_bech32("bc", 0, RNG.randbytes(20)))
        out.append(_bech32("bc", 1, RNG.randbytes(32)))
        out.append("0x" + RNG.randbytes(20).hex())
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    for prefix, size in (("pi_", 24), ("cs_test_", 58), ("file-", 22), ("vs_", 24), ("msg_", 24), ("cus_", 24)):
        out.append(prefix + "".join(RNG.choice(alnum) for _ in range(size)))
    png = b"\x89PNG\r\n\x1a\n" + RNG.randbytes(300)
    for media in (png, b"OggS\x00\x02" + RNG.randbytes(200), b"\x00\x00\x00\x18ftypheic" + RNG.randbytes(120)):
        out.append(base64.b64encode(media).decode())
    out.append(base64.b64encode(RNG.randbytes(400)).decode())  # media of a format no signature names
    return out


VALUES = [value.strip() for value in _values()]  # arguments are normalised: white space at the ends goes


@tool(name="lookup_value", side_effect="read_only")
def lookup_value(ref: str) -> dict[str, object]:
    return {"ref": ref, "echo": [ref], "text": f"the value is {ref} as stored", "next_page_token": ref[-40:]}


def test_at_least_40_generated_public_values() -> None:
    assert len(VALUES) >= 40 and len(set(VALUES)) == len(VALUES)


def test_generated_public_values_survive_tape_and_replay_unchanged(tmp_path: Path) -> None:
    tape = tmp_path / "data.jsonl"
    with record(tape), agent_run("data"):
        live = [lookup_value(ref) for ref in VALUES]
    data = tape.read_bytes()
    assert b"[REDACTED" not in data, [v[:40] for v in VALUES if "[REDACTED" in str(lookup_value.__wrapped__(v))]
    for step, ref in zip(load_tape(tape).runs[0].steps, VALUES, strict=True):
        assert step.args == {"ref": ref}
    with replay(tape) as session, agent_run("data"):
        replayed = [lookup_value(ref) for ref in VALUES]
    assert replayed == live
    assert session.stats.hits == len(VALUES)


@pytest.mark.parametrize("index", range(len(VALUES)))
def test_each_public_value_is_kept_by_the_redactor(index: int) -> None:
    from otel_agent_replay.capture import DEFAULT_REDACTOR

    value = VALUES[index]
    assert DEFAULT_REDACTOR.redact_text(f"value: {value} end") == f"value: {value} end"
