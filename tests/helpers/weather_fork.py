"""The edited-weather fork: an openai-SDK agent with a weather tool over httpx and a ``save_note`` write tool.

The weather service is a small HTTP server on 127.0.0.1 (``GET /weather?city=…`` → ``{"city", "sky",
"temp_c"}``; ``GET /time?city=…`` → ``{"city", "local"}``), so the tool's own HTTP call is a child step
of ``get_weather#1`` on the tape. The agent asks the model (the fake provider), which calls every tool
it is offered; the agent runs them, hands their JSON back, and saves the model's answer as a note.
``weather_world``, ``record_weather`` and ``fork_weather`` make the recording and its edited fork.
"""

from __future__ import annotations

import http.server
import json
import os
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from otel_agent_replay import agent_run, record, replay, tool

from .loopback import serve_on_loopback
from .model_server import FakeProvider, fake_provider

SKY = {"Paris": "sunny"}
LOCAL = {"Paris": "14:05"}
RAINY = {"city": "Paris", "sky": "rainy", "temp_c": 18}
"""The edit of the fork: ``get_weather#1`` answers rain instead of the recorded sun."""
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name.removeprefix('get_')} in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    for name in ("get_weather", "get_time")
]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        city = urllib.parse.parse_qs(url.query).get("city", ["?"])[0]
        if url.path == "/weather":
            payload: dict[str, Any] = {"city": city, "sky": SKY.get(city, "cloudy"), "temp_c": 18}
        elif url.path == "/time":
            payload = {"city": city, "local": LOCAL.get(city, "12:00")}
        else:
            self.send_error(404)
            return
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def weather_service() -> Iterator[str]:
    """The weather service's URL (``http://127.0.0.1:PORT``), for the block's length."""
    with serve_on_loopback(_Handler) as url:
        yield url


@tool(side_effect="read_only")
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city, from the weather service (over httpx: a child HTTP step)."""
    return dict(httpx.get(f"{os.environ['WEATHER_URL']}/weather", params={"city": city}, timeout=10).json())


@tool(side_effect="read_only")
def get_time(city: str) -> dict[str, Any]:
    """The local time in a city, from the same service."""
    return dict(httpx.get(f"{os.environ['WEATHER_URL']}/time", params={"city": city}, timeout=10).json())


@tool(side_effect="write")
def save_note(text: str) -> dict[str, Any]:
    """Save the answer as a note: a file in ``NOTES_DIR``, so a test sees whether it really ran."""
    note = Path(os.environ["NOTES_DIR"]) / "note.txt"
    note.write_text(text)
    return {"saved": True}


_RUN = {"get_weather": get_weather, "get_time": get_time}


def weather_agent(model_url: str, city: str = "Paris", tools: int = 1) -> str:
    """Ask, run the tools the model asks for, answer, save the answer."""
    client = openai.OpenAI(base_url=model_url, api_key="sk-test", max_retries=0)
    offered = TOOLS[:tools]
    messages: list[Any] = [{"role": "user", "content": f"What is the weather in {city}?"}]
    with agent_run("weather", input=city) as run:
        first = client.chat.completions.create(model="gpt-test", messages=messages, tools=offered).choices[0]
        messages.append(first.message.model_dump(exclude_none=True))
        for call in first.message.tool_calls or ():
            result = _RUN[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        final = client.chat.completions.create(model="gpt-test", messages=messages, tools=offered)
        text = final.choices[0].message.content or ""
        save_note(text)
        run.set_output(text)
        return text


def run() -> str:
    """``weather_agent`` with its settings from the environment (for ``fork --agent``)."""
    return weather_agent(os.environ["WEATHER_MODEL_URL"], tools=int(os.environ.get("WEATHER_TOOLS", "1")))


@contextmanager
def weather_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The fake provider and the weather service running, ``NOTES_DIR`` and ``WEATHER_URL`` set."""
    notes = tmp_path / "notes"
    notes.mkdir()
    monkeypatch.setenv("NOTES_DIR", str(notes))
    with fake_provider() as fp, weather_service() as url:
        monkeypatch.setenv("WEATHER_URL", url)
        yield fp


def record_weather(path: Path, fp: FakeProvider, tools: int = 1) -> Path:
    """Record one run of the agent to ``path`` (its note written, then removed)."""
    with record(path):
        weather_agent(fp.openai_url, tools=tools)
    note = Path(os.environ["NOTES_DIR"]) / "note.txt"
    assert note.exists()
    note.unlink()
    return path


def fork_weather(tape: Path, fp: FakeProvider, edit: dict[str, object], tools: int = 1) -> Path:
    """Replay ``tape`` with ``edit`` and ``then="live"`` (``save_note`` stubbed) into ``what-if.jsonl``."""
    fork_tape = tape.with_name("what-if.jsonl")
    with replay(tape, edit=edit, then="live", stub=("save_note",), fork_tape=fork_tape) as r:
        text = weather_agent(fp.openai_url, tools=tools)
    assert "rainy" in text  # the model answered from the edited result
    assert not (Path(os.environ["NOTES_DIR"]) / "note.txt").exists()  # the write stayed stubbed
    assert r.fork is not None and r.fork.step_id == "openai.chat.completions#2"
    return fork_tape
