"""Issue 30: a response body sent compressed (gzip, deflate, br, zstd) is decoded before it is scanned and
kept on the tape as the JSON it is, and it replays as the client expects: requests, urllib3, httpx and
aiohttp read the replayed body with ``.json()`` as they read the live one.

The server on 127.0.0.1 compresses with the codings' own libraries (``gzip``, ``zlib``, ``brotli``,
``zstandard``), as a real server's middleware would; the body carries a secret, which must not reach
the tape in any form (neither whole nor hidden in compressed bytes under base64).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import http.server
import json
import urllib.parse
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import brotli
import httpx
import pytest
import requests
import urllib3
import zstandard
from helpers.loopback import serve_on_loopback
from helpers.secrets import GITHUB_CLASSIC, json_forms

from otel_agent_replay import agent_run, load_tape, record, replay

ITEMS = [{"sku": f"SKU-{n:04d}", "name": f"widget {n}", "price": n * 1.25} for n in range(40)]
PAYLOAD = {"items": ITEMS, "note": f"deploy with {GITHUB_CLASSIC}"}

CODINGS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


class _Compressing(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        coding = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["coding"][0]
        body = CODINGS[coding](json.dumps(PAYLOAD).encode())
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", coding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _requests(url: str, coding: str) -> Any:
    with requests.Session() as session:
        return session.get(url, headers={"Accept-Encoding": coding}).json()


def _urllib3(url: str, coding: str) -> Any:
    with urllib3.PoolManager() as pool:
        return pool.request("GET", url, headers={"Accept-Encoding": coding}).json()


def _httpx(url: str, coding: str) -> Any:
    with httpx.Client() as client:
        return client.get(url, headers={"Accept-Encoding": coding}).json()


def _aiohttp(url: str, coding: str) -> Any:
    async def get() -> Any:
        async with aiohttp.ClientSession() as session, session.get(url, headers={"Accept-Encoding": coding}) as r:
            return await r.json()

    return asyncio.run(get())


CLIENTS: dict[str, Callable[[str, str], Any]] = {
    "requests": _requests,
    "urllib3": _urllib3,
    "httpx": _httpx,
    "aiohttp": _aiohttp,
}


@pytest.mark.parametrize("coding", list(CODINGS))
@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_compressed_body_is_scanned_as_json_and_replays_as_live(tmp_path: Path, client: str, coding: str) -> None:
    get = CLIENTS[client]
    tape = tmp_path / "compressed.jsonl"
    with serve_on_loopback(_Compressing) as base:
        url = f"{base}/catalogue?coding={coding}"
        with record(tape), agent_run("catalogue"):
            live = get(url, coding)
        assert live == PAYLOAD  # the client decoded it live
        data = tape.read_bytes()
        assert not any(form in data for form in json_forms(GITHUB_CLASSIC))
        compressed = base64.b64encode(CODINGS[coding](json.dumps(PAYLOAD).encode()))
        assert compressed[:24] not in data  # the body was not kept as its compressed bytes
        (step,) = load_tape(tape).runs[0].steps
        assert step.result["body"]["items"] == ITEMS  # kept as the JSON it is, and scanned as such
        with replay(tape) as session, agent_run("catalogue"):
            replayed = get(url, coding)
    assert session.stats.hits == 1
    assert replayed["items"] == ITEMS  # .json() works on the replayed body, as it did live
    assert GITHUB_CLASSIC not in replayed["note"] and replayed["note"].startswith("deploy with ")
