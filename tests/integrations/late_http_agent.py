"""An agent whose HTTP client library is first imported inside the block, run as a process of its own:

    python late_http_agent.py record|replay TAPE URL httpx|requests|aiohttp|botocore block|thread

``URL`` is the REST API of ``helpers.rest_server`` (for botocore: the fake Bedrock runtime). ``block`` runs
the agent in the block's own thread; ``thread`` in a thread started after the block began, given the
block's context. Prints one JSON line: whether the library was imported before the agent's own import
(before the block, and inside it once the block had begun: a block imports none), what the
agent saw, and the replay's counters.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import sys
import threading
from typing import Any

from otel_agent_replay import agent_run, record, replay

CLIENTS = ("httpx", "httpx2", "aiohttp", "urllib3", "requests", "botocore")
MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


def _httpx(url: str) -> list[str]:
    import httpx

    with httpx.Client(timeout=5) as client:
        return [client.get(f"{url}/items?q=a").text, client.post(f"{url}/orders", json={"item": "tea"}).text]


def _requests(url: str) -> list[str]:
    import requests

    with requests.Session() as session:
        got = session.get(f"{url}/items?q=a", timeout=5).text
        return [got, session.post(f"{url}/orders", json={"item": "tea"}, timeout=5).text]


def _aiohttp(url: str) -> list[str]:
    import aiohttp

    async def run() -> list[str]:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/items?q=a") as got:
                first = await got.text()
            async with session.post(f"{url}/orders", json={"item": "tea"}) as posted:
                return [first, await posted.text()]

    return asyncio.run(run())


def _botocore(url: str) -> list[str]:
    import botocore.config
    import botocore.session

    client = botocore.session.get_session().create_client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKIAZ7QW3ERTY5UIOP2L",
        aws_secret_access_key="generated/for+the/test+only+Wq9Lr2Vx9Kp4",
        config=botocore.config.Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    messages = [{"role": "user", "content": [{"text": "What is the capital of France?"}]}]
    answer = client.converse(modelId=MODEL, messages=messages, inferenceConfig={"maxTokens": 64})
    return [answer["output"]["message"]["content"][0]["text"]]


AGENTS = {"httpx": _httpx, "requests": _requests, "aiohttp": _aiohttp, "botocore": _botocore}


def _imported() -> list[str]:
    """The client libraries imported now."""
    return [name for name in CLIENTS if name in sys.modules]


def _run(lib: str, url: str, where: str, out: dict[str, Any]) -> None:
    def agent() -> None:
        out["imported_in_block"] = _imported()
        with agent_run("late"):
            out["seen"] = AGENTS[lib](url)

    if where == "block":
        agent()
        return
    context = contextvars.copy_context()  # the block's context, carried into a thread started inside it
    errors: list[BaseException] = []

    def in_thread() -> None:
        try:
            context.run(agent)
        except BaseException as exc:  # re-raised in the block's thread
            errors.append(exc)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(120)
    if errors:
        raise errors[0]


def main() -> None:
    mode, tape, url, lib, where = sys.argv[1:6]
    out: dict[str, Any] = {"imported_before": _imported()}
    if mode == "record":
        with record(tape, agent="late"):
            _run(lib, url, where, out)
    else:
        session = None
        try:
            with replay(tape, side_effects="stub") as session:  # the POST's recorded answer, never sent
                _run(lib, url, where, out)
        except Exception as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        assert session is not None
        stats = session.stats
        out["stats"] = {
            k: getattr(stats, k)
            for k in ("hits", "stubbed_side_effects", "misses", "unused", "loopback_connections", "blocked_connections")
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
