"""A generated corpus of realistic tool results for the redaction benchmark (no real secrets).

Every shape is built from a seeded ``random.Random``, so each run (and each checkout) times the same
values. Each holds what makes redaction work: ids, UUIDs, URLs, hex digests, timestamps and numbers,
so the detector, the context and the entropy candidates all have something to look at and the fast
path ("nothing here") is not the only one timed. Nothing in it is a credential: a test-only value of
a credential's shape would be redacted and would measure the slow path as if it were the usual one.

``shapes(size)`` gives ``{name: value}``, each value about ``size`` bytes of compact JSON;
``step_rows(50)`` is the 4 KB result of 50 small rows.
"""

from __future__ import annotations

import base64
import hashlib
import random
import struct
import uuid
import zlib
from typing import Any

_WORD_TEXT = (
    "order shipped parcel warehouse invoice refund customer delivery address return window policy item "
    "quantity price discount coupon tracking carrier label weekend morning agent review rating reply "
    "support ticket status update pending delivered cotton linen walnut oak table chair lamp shelf "
    "desk sofa cushion blanket kettle mug plate bowl glass bottle candle frame mirror clock basket "
    "the a of and to in for with on at by from that this is was are be it as or an will can"
)
_WORDS = _WORD_TEXT.split()
_HOSTS = ("shop.example.com", "cdn.example.net", "api.example.org", "files.example.com", "docs.example.io")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, rng.randint(6, 18)) for _ in range(rng.randint(3, 7)))


def _url(rng: random.Random) -> str:
    host = rng.choice(_HOSTS)
    path = "/".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    return f"https://{host}/{path}/{rng.randint(1, 99999)}?page={rng.randint(1, 9)}&sort=price"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _sha(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(16)).hexdigest()


def _row(rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "sku": f"SKU-{rng.randint(100000, 999999)}",
        "id": _uuid(rng),
        "name": " ".join(rng.choice(_WORDS) for _ in range(3)).title(),
        "description": _sentence(rng, rng.randint(8, 20)),
        "price": round(rng.uniform(2, 900), 2),
        "currency": "EUR",
        "stock": rng.randint(0, 400),
        "url": _url(rng),
        "image": f"https://cdn.example.net/img/{_sha(rng)[:16]}.jpg",
        "sha256": _sha(rng),
        "tags": [rng.choice(_WORDS) for _ in range(3)],
        "updated": f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{rng.randint(0, 59):02d}Z",
    }


def catalogue(rng: random.Random, size: int) -> Any:
    rows: list[dict[str, Any]] = []
    while sum(len(str(r)) for r in rows) < size:
        rows.append(_row(rng, len(rows)))
    return {"total": len(rows), "next_page": None, "items": rows}


def prose(rng: random.Random, size: int) -> Any:
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        parts.append(_paragraph(rng))
    return {"title": "Customer guide", "text": "\n\n".join(parts)}


def _log_line(rng: random.Random, n: int) -> str:
    stamp = f"2026-12-02T07:{n // 60 % 60:02d}:{n % 60:02d}.{rng.randint(0, 999):03d}Z"
    level = rng.choice(_LEVELS)
    kind = rng.randint(0, 4)
    if kind == 0:
        return (
            f'{stamp} {level} http 10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)} "GET '
            f'{_url(rng)[len("https://") :]} HTTP/1.1" {rng.choice((200, 200, 304, 404, 500))} '
            f"{rng.randint(100, 90000)} {rng.random() * 900:.1f}ms request_id={_uuid(rng)}"
        )
    if kind == 1:
        return (
            f"{stamp} {level} worker[{rng.randint(100, 9999)}] job {rng.choice(_WORDS)} finished in "
            f"{rng.random() * 30:.3f}s trace_id={rng.getrandbits(128):032x} span_id={rng.getrandbits(64):016x}"
        )
    if kind == 2:
        return (
            f"{stamp} {level} db query took {rng.randint(1, 900)} ms rows={rng.randint(0, 5000)} "
            f"table=orders_{rng.randint(2020, 2026)} shard=eu-west-{rng.randint(1, 3)}"
        )
    if kind == 3:
        return (
            f"{stamp} {level} deploy commit={hashlib.sha1(rng.randbytes(8)).hexdigest()} "
            f"image=registry.example.com/shop/api:{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)} "
            f"pod=api-{rng.getrandbits(40):010x}-{rng.choice('abcdefghjk')}{rng.randint(1000, 9999)}"
        )
    return f"{stamp} {level} {_sentence(rng, rng.randint(5, 14))} user={rng.randint(1, 10**6)}"


def log_lines(rng: random.Random, size: int) -> Any:
    lines: list[str] = []
    while sum(map(len, lines)) < size:
        lines.append(_log_line(rng, len(lines)))
    return {"file": "/var/log/shop/api.log", "lines": len(lines), "text": "\n".join(lines)}


def source_code(rng: random.Random, size: int) -> Any:
    out: list[str] = ['"""Order handling."""', "", "from __future__ import annotations", "", "import hashlib", ""]
    n = 0
    while sum(map(len, out)) < size:
        name = "_".join(rng.choice(_WORDS[:40]) for _ in range(2))
        out += [
            f"def {name}_{n}(order_id: str, limit: int = {rng.randint(1, 100)}) -> dict[str, object]:",
            f'    """{_sentence(rng, 9)}"""',
            f'    url = f"{_url(rng)}"',
            f'    digest = "{_sha(rng)}"  # expected content hash',
            f'    ref = "{_uuid(rng)}"',
            "    for i in range(limit):",
            f"        if i % {rng.randint(2, 9)} == 0:",
            f'            log.info("{_sentence(rng, 6)}", extra={{"order": order_id, "i": i}})',
            f'    return {{"status": "{rng.choice(_WORDS)}", "url": url, "digest": digest, "ref": ref}}',
            "",
        ]
        n += 1
    return {"path": "shop/orders.py", "content": "\n".join(out)}


def html(rng: random.Random, size: int) -> Any:
    out = ['<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop &amp; more</title>']
    out.append(f'<link rel="stylesheet" href="https://cdn.example.net/css/site.{_sha(rng)[:12]}.css">')
    out.append("</head><body>")
    while sum(map(len, out)) < size:
        out.append(
            f'<div class="card product-{rng.randint(1, 999)}" data-id="{_uuid(rng)}">'
            f'<a href="{_url(rng).replace("&", "&amp;")}">{" ".join(rng.choice(_WORDS) for _ in range(3))}</a>'
            f"<p>{_sentence(rng, 14)} &ndash; only &euro;{rng.randint(2, 900)}</p>"
            f'<img src="https://cdn.example.net/img/{_sha(rng)[:20]}.webp" alt="{rng.choice(_WORDS)}"></div>'
        )
    out.append("</body></html>")
    return {"url": _url(rng), "status": 200, "body": "\n".join(out)}


def config_files(rng: random.Random, size: int) -> Any:
    files: dict[str, str] = {}
    n = 0
    while sum(map(len, files.values())) < size:
        yaml = "\n".join(
            [
                f"service: api-{n}",
                f"image: registry.example.com/shop/api:{rng.randint(1, 9)}.{rng.randint(0, 40)}",
                "replicas: 3",
                "env:",
                f"  LOG_LEVEL: {rng.choice(('info', 'debug'))}",
                f"  DATABASE_HOST: db-{rng.randint(1, 9)}.internal",
                "  DATABASE_PASSWORD: ${DATABASE_PASSWORD}",
                f"  FEATURE_FLAGS: {','.join(rng.choice(_WORDS) for _ in range(4))}",
                f"  CONFIG_SHA: {_sha(rng)}",
                "resources:",
                f"  limits: {{cpu: {rng.randint(1, 4)}, memory: {rng.randint(1, 8)}Gi}}",
            ]
        )
        ini = "\n".join(
            [
                "[server]",
                f"host = 0.0.0.0\nport = {rng.randint(1024, 65000)}",
                f"workers = {rng.randint(1, 16)}",
                "[cache]",
                f"url = redis://cache-{rng.randint(1, 9)}.internal:6379/0",
                f"ttl_seconds = {rng.randint(60, 86400)}",
                f"instance_id = {_uuid(rng)}",
            ]
        )
        env = "\n".join(
            [
                f"APP_ENV=production\nAPP_REGION=eu-west-{rng.randint(1, 3)}",
                f"APP_BUILD={hashlib.sha1(rng.randbytes(8)).hexdigest()}",
                f"PUBLIC_URL={_url(rng)}",
            ]
        )
        files[f"deploy/api-{n}.yaml"] = yaml
        files[f"deploy/api-{n}.ini"] = ini
        files[f"deploy/api-{n}.env"] = env
        n += 1
    return {"files": files}


def _png(rng: random.Random, width: int, height: int) -> bytes:
    raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def base64_media(rng: random.Random, size: int) -> Any:
    items: list[dict[str, Any]] = []
    kinds = ("png", "mp3", "mp4", "ogg", "bin")
    while sum(len(item["data"]) for item in items) < size:
        kind = kinds[len(items) % len(kinds)]
        body = rng.randbytes(rng.randint(2000, 12000))
        if kind == "png":
            data = _png(rng, 40, 30)
        elif kind == "mp3":
            data = b"ID3\x04\x00\x00" + body
        elif kind == "mp4":
            data = b"\x00\x00\x00\x18ftypmp42" + body
        elif kind == "ogg":
            data = b"OggS\x00\x02" + body
        else:
            data = body
        items.append({"name": f"attachment-{len(items)}.{kind}", "data": base64.b64encode(data).decode("ascii")})
    return {"attachments": items}


SHAPES = {
    "catalogue rows": catalogue,
    "prose": prose,
    "log lines": log_lines,
    "source code": source_code,
    "HTML": html,
    "configuration files": config_files,
    "base64 media": base64_media,
}


def shapes(size: int = 100_000, seed: int = 30) -> dict[str, Any]:
    """Every shape, about ``size`` bytes of JSON each, the same for one seed."""
    return {name: make(random.Random(f"{seed}:{name}"), size) for name, make in SHAPES.items()}


def step_rows(count: int = 50, seed: int = 30) -> list[dict[str, Any]]:
    """``count`` small rows, about 4 KB of JSON in all: the recorded step the benchmark compares to a bare span."""
    rng = random.Random(f"{seed}:step")
    return [
        {
            "id": f"ord_{10_000 + i}",
            "ref": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "qty": rng.randint(1, 9),
            "amount": round(rng.uniform(2, 300), 2),
        }
        for i in range(count)
    ]
