"""A tape full of stand-ins: ``check`` passes it, and the real ``gitleaks`` finds nothing in it (issue 30).

The secrets are the project's corpus (``helpers.secret_corpus``, ``helpers.secrets``) and vendor tokens
generated here, some with a valid checksum (GitHub's and npm's CRC32), and real private keys made by
``cryptography``. A tool returns each in the text an
agent meets it in, and the agent echoes that text into a later call, so the tape holds every stand-in
twice: in a result and in an argument. ``gitleaks`` runs with its default configuration (every rule of
the maintained set; no ``.gitleaks.toml`` or ``GITLEAKS_CONFIG`` in play) over the directory holding the
tape alone. The control in the same test: ``gitleaks`` over a file of the raw texts finds every generated
vendor token and many rules' worth of the corpus, so a scanner that found nothing at all could not pass.
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from helpers.go_servers import server_binary
from helpers.secret_corpus import CORPUS
from helpers.secrets import FREE_TEXT, SECRETS
from helpers.token_checksum import crc_base62

from otel_agent_replay import agent_run, load_tape, record, tool
from otel_agent_replay.core import attributes as A

_rng = random.Random(30_2026)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _checksummed(prefix: str) -> str:
    """A GitHub or npm token as the vendor mints it: 30 random characters, then their base62 CRC32."""
    body = _pick(_ALNUM, 30)
    return prefix + body + crc_base62(body)


def _vendor_tokens() -> list[str]:
    """Tokens of vendors' formats, generated (pieces keep the prefixes apart in this file)."""
    return [
        _checksummed("gh" + "p_"),
        _checksummed("gh" + "o_"),
        _checksummed("gh" + "s_"),
        _checksummed("gh" + "u_"),
        _checksummed("np" + "m_"),
        "github" + "_pat_" + _pick(_ALNUM, 22) + "_" + _pick(_ALNUM, 59),
        "gl" + "pat-" + _pick(_ALNUM + "_-", 20),
        "AK" + "IA" + _pick(string.ascii_uppercase + "234567", 16),
        "xo" + "xb-" + f"{_rng.randrange(10**11, 10**12)}-{_rng.randrange(10**11, 10**12)}-" + _pick(_ALNUM, 24),
        "sk" + "_live_" + _pick(_ALNUM, 99),
        "rk" + "_live_" + _pick(_ALNUM, 99),
        "sk-" + "proj-" + _pick(_ALNUM + "_-", 74) + "T3Blbk" + "FJ" + _pick(_ALNUM + "_-", 74),
        "sk-" + "ant-api03-" + _pick(_ALNUM + "_-", 93) + "AA",
        "AI" + "za" + _pick(_ALNUM + "_-", 35),
        "SG" + "." + _pick(_ALNUM + "_-", 22) + "." + _pick(_ALNUM + "_-", 43),
        "pypi" + "-AgEIcHlwaS5vcmc" + _pick(_ALNUM + "_-", 70),
        "shp" + "at_" + _pick(_HEX, 32),
        "do" + "p_v1_" + _pick(_HEX, 64),
        "hf" + "_" + _pick(string.ascii_letters, 34),
        "gl" + "sa_" + _pick(_ALNUM, 32) + "_" + _pick(_HEX, 8),
        "lin" + "_api_" + _pick(_ALNUM, 40),
        "pul" + "-" + _pick(_HEX, 40),
    ]


def _private_keys() -> list[str]:
    """Real private keys in PEM, made by ``cryptography`` (RSA traditional, EC and Ed25519 PKCS #8)."""
    pem, none = serialization.Encoding.PEM, serialization.NoEncryption()
    keys = [
        rsa.generate_private_key(65537, 2048).private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL, none),
        ec.generate_private_key(ec.SECP256R1()).private_bytes(pem, serialization.PrivateFormat.PKCS8, none),
        ed25519.Ed25519PrivateKey.generate().private_bytes(pem, serialization.PrivateFormat.PKCS8, none),
    ]
    return [key.decode() for key in keys]


VENDOR = [token for _ in range(3) for token in _vendor_tokens()]
KEYS = _private_keys()
TEXTS = [
    *(sample.text for sample in CORPUS),
    *FREE_TEXT,
    *(f"export SERVICE_TOKEN={secret}" for secret in SECRETS),
    *(f"the deploy key is {token}" for token in VENDOR),
    *(f"key file:\n{key}" for key in KEYS),
]


@tool(name="read_secret_text", side_effect="read_only")
def read_secret_text(n: int) -> dict[str, Any]:
    return {"text": TEXTS[n], "n": n}


@tool(name="send_text", side_effect="read_only")
def send_text(text: str) -> str:
    return f"sent {len(text)} characters"


def _gitleaks(binary: Path, folder: Path) -> list[dict[str, Any]]:
    """The findings of ``gitleaks dir`` over ``folder`` with its default rules (a JSON report)."""
    report = folder.parent / f"{folder.name}-report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITLEAKS")}
    done = subprocess.run(
        [str(binary), "dir", str(folder), "--no-banner", "--report-format", "json", "--report-path", str(report),
         "--exit-code", "0", "--log-level", "warn"],
        capture_output=True, text=True, timeout=600, env=env, cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, f"gitleaks failed on {folder}: {done.stderr}"
    findings: list[dict[str, Any]] = json.loads(report.read_text())
    return findings


def test_gitleaks_finds_the_raw_secrets_and_nothing_on_a_tape_of_their_stand_ins_which_check_passes(
    tmp_path: Path,
) -> None:
    gitleaks = server_binary("AGENT_REPLAY_GITLEAKS")

    # the control: the raw texts, as a file a developer might commit
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "secrets.txt").write_text("\n".join(TEXTS) + "\n")
    found = _gitleaks(gitleaks, raw)
    caught = {f["Secret"] for f in found}
    assert [token for token in VENDOR if token not in caught] == [], "gitleaks finds every generated vendor token"
    rules = {f["RuleID"] for f in found}
    assert sum(f["RuleID"] == "private-key" for f in found) >= len(KEYS), "and every private key"
    assert len(rules) >= 40, f"gitleaks finds the corpus under many rules, not {sorted(rules)}"

    # the tape: every secret in a result, then echoed into a later call's argument
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    tape = tapes / "standins.jsonl"
    with record(tape), agent_run("leaky_tools"):
        for n in range(len(TEXTS)):
            send_text(read_secret_text(n)["text"])
    data = tape.read_text()
    assert [token for token in VENDOR if token in data] == [], "no vendor token reaches the tape"
    assert [s.secret for s in CORPUS if s.secret in data] == [], "no corpus secret reaches the tape"
    assert [key for key in KEYS if key.splitlines()[1] in data] == [], "no private key reaches the tape"
    steps = load_tape(tape).runs[0].steps
    assert len(steps) == 2 * len(TEXTS)
    standing = [s for s in steps if s.tool == "read_secret_text" and A.RESULT_STAND_INS in s.attributes]
    assert len(standing) >= len(VENDOR) + len(CORPUS) // 2, "the tape holds stand-ins, not only markers"

    checked = subprocess.run(
        [sys.executable, "-m", "otel_agent_replay.cli", "check", str(tape)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, f"check flags a tape of stand-ins:\n{checked.stdout}\n{checked.stderr}"

    leaks = _gitleaks(gitleaks, tapes)
    assert [(f["RuleID"], f["StartLine"], f["Match"]) for f in leaks] == [], "gitleaks finds nothing on the tape"
