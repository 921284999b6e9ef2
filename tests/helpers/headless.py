"""Open a page in Debian's headless chromium, driven over the DevTools protocol: its DOM after its
scripts ran, a screenshot, and every request the page made or tried.

The page's requests are read from the protocol's Network events (and the requests its
Content-Security-Policy refused from the log), so the browser's own background traffic (time,
component updates) is not mistaken for the page's. That traffic goes to a proxy on 127.0.0.1 that
answers nothing. ``scripts/dev.sh`` installs chromium (``ensure_chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from helpers.processes import stop_group


def chromium() -> str:
    found = os.environ.get("AGENT_REPLAY_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise AssertionError(
            "chromium is missing: the HTML page tests open the pages in a real headless browser. "
            "Run the tests with scripts/dev.sh test (it installs Debian's chromium), or apt-get install chromium."
        )
    return found


@dataclass
class CountingProxy:
    port: int
    connections: list[bytes] = field(default_factory=list)


@contextmanager
def counting_proxy() -> Iterator[CountingProxy]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.1)
    proxy = CountingProxy(server.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    proxy.connections.append(conn.recv(4096))
                except OSError:
                    proxy.connections.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        stop.set()
        thread.join()
        server.close()


@dataclass(frozen=True)
class Rendered:
    dom: str
    png: bytes
    requests: tuple[str, ...]
    """Every request the page made or tried (its own document excluded), from the DevTools protocol."""
    refused: tuple[str, ...]
    """Console and log entries of requests the page's Content-Security-Policy refused."""
    probe: Any = None
    """What ``render(..., probe=EXPRESSION)`` evaluated to in the page once its charts were drawn."""


class _Devtools:
    """A DevTools protocol session on one page target, over its WebSocket."""

    def __init__(self, url: str) -> None:
        self.ws = connect(url, max_size=None, open_timeout=30)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return dict(message.get("result") or {})
            self.events.append(message)

    def wait_for(self, method: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.events.append(json.loads(self.ws.recv(timeout=left)))


def _devtools_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text().strip():
        assert process.poll() is None, "chromium exited before it opened its DevTools port"
        if time.monotonic() > deadline:
            raise TimeoutError("chromium did not open its DevTools port within 60 s")
        time.sleep(0.05)
    return int(marker.read_text().split()[0])


def render(page: Path, width: int = 1280, height: int = 1600, probe: str | None = None) -> Rendered:
    """Open ``page`` in headless chromium: its DOM once its charts are drawn, a PNG screenshot, and the
    requests it attempted (watched through the DevTools protocol, so the browser's own background
    traffic is not counted; a proxy that answers nothing keeps that traffic off the network anyway).
    ``probe``: a JavaScript expression evaluated in the page then, its JSON value returned."""
    # chromium's helper processes may still write into the profile as it goes: clean up what can be
    with counting_proxy() as proxy, tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        profile = Path(tmp)
        process = subprocess.Popen(
            [
                chromium(),
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--proxy-server=http://127.0.0.1:{proxy.port}",
                "--proxy-bypass-list=<-loopback>",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helper processes end with it (the group is stopped below)
        )
        try:
            port = _devtools_port(profile, process)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
                targets = json.loads(answer.read())
            target = next(t for t in targets if t.get("type") == "page")
            tools = _Devtools(target["webSocketDebuggerUrl"])
            for domain in ("Network", "Page", "Runtime", "Log"):
                tools.call(f"{domain}.enable")
            url = page.resolve().as_uri()
            tools.call("Page.navigate", url=url)
            tools.wait_for("Page.loadEventFired")
            deadline = time.monotonic() + 30
            while True:
                drawn = tools.call("Runtime.evaluate", expression="document.body.getAttribute('data-charts-drawn')")
                if drawn.get("result", {}).get("value") is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            dom = tools.call("Runtime.evaluate", expression="document.documentElement.outerHTML")["result"]["value"]
            probed = None
            if probe is not None:
                answer = tools.call("Runtime.evaluate", expression=probe, returnByValue=True)
                assert "exceptionDetails" not in answer, f"the probe raised: {answer['exceptionDetails']}"
                probed = answer["result"].get("value")
            shot = tools.call("Page.captureScreenshot", format="png")["data"]
            tools.ws.close()
        finally:
            stop_group(process)
    requests = tuple(
        e["params"]["request"]["url"]
        for e in tools.events
        if e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"] != url
    )
    refused = tuple(
        str(e["params"].get("entry", e["params"]))
        for e in tools.events
        if e.get("method") in ("Log.entryAdded", "Runtime.consoleAPICalled")
        and "Content Security Policy" in json.dumps(e["params"])
    )
    return Rendered(dom, base64.b64decode(shot), requests, refused, probed)


def png_colours(png: bytes, limit: int = 64) -> set[tuple[int, ...]]:
    """The distinct pixel colours of an 8-bit RGB or RGBA PNG (up to ``limit``), decoded with zlib alone."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", b""
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            idat += data
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour type {colour}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    colours: set[tuple[int, ...]] = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        previous = line
        if row % 8 == 0:  # every eighth row is plenty to tell a drawn page from a blank one
            for x in range(0, stride, channels * 4):
                colours.add(tuple(line[x : x + 3]))
            if len(colours) >= limit:
                break
    return colours
