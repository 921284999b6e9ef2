"""otel-agent-replay push / pull: output, --json, and the exit status (0 done, 2 usage or tape, 3 endpoint)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers.go_servers import Jaeger, start_jaeger
from helpers.jaeger_json import tape_documents
from helpers.jaeger_server import FakeJaeger, jaeger_server
from helpers.otlp_receiver import closed_port, http_receiver

from otel_agent_replay import load_tape
from otel_agent_replay.cli import main
from otel_agent_replay.cli._demo import record_demo
from otel_agent_replay.core import attributes as A


@pytest.fixture
def demo_tape(tmp_path: Path) -> Path:
    return record_demo(tmp_path / "demo").tape


def test_push_prints_what_it_sent(demo_tape: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with http_receiver() as (url, got):
        assert main(["push", str(demo_tape), "--endpoint", url, "--header", "x-team=agents"]) == 0
    out = capsys.readouterr().out
    assert f"pushed 5 span(s) of {demo_tape} to {url}/v1/traces (http/protobuf, 1 request(s))" in " ".join(out.split())
    assert "--content" in out  # the note on content left out
    assert len(got.spans()) == 5 and got.headers[0]["x-team"] == "agents"


def test_push_json_and_endpoint_from_the_variables(
    demo_tape: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    with http_receiver() as (url, got):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        assert main(["push", str(demo_tape), "--content", "--json"]) == 0
    report = orjson.loads(capsysbinary.readouterr().out)
    assert report["spans"] == 5 and report["content_stripped"] == 0 and report["endpoint"] == f"{url}/v1/traces"
    assert len(got.spans()) == 5


def test_push_exit_status(
    demo_tape: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert main(["push", str(demo_tape)]) == 2
    assert "push needs --endpoint URL" in capsys.readouterr().err
    port = closed_port()
    assert main(["push", str(demo_tape), "--endpoint", f"http://127.0.0.1:{port}"]) == 3
    assert f"127.0.0.1:{port}/v1/traces" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    assert main(["push", str(bad), "--endpoint", f"http://127.0.0.1:{port}"]) == 2
    assert f"{bad}:1" in capsys.readouterr().err
    assert main(["push", str(demo_tape), "--endpoint", "http://x", "--header", "novalue"]) == 2
    assert "is not key=value" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["push", str(demo_tape), "--protocol", "http/json"])
    assert usage.value.code == 2


def test_pull_writes_a_tape(demo_tape: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run,) = load_tape(demo_tape).runs
    out = tmp_path / "pulled.jsonl"
    with jaeger_server(FakeJaeger(tape_documents(demo_tape))) as url:
        assert main(["pull", "--jaeger", url, "--trace-id", run.trace_id, "-o", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"pulled 1 trace(s), 5 span(s) from {url} (api v3) into {out}: 1 run(s), 4 step(s)" in text
    assert [s.call_key for s in load_tape(out).runs[0].steps] == [s.call_key for s in run.steps]


def test_pull_by_service_json(demo_tape: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    doc = tape_documents(demo_tape)[0]
    service = next(
        kv["value"]["stringValue"]
        for kv in doc["resourceSpans"][0]["resource"]["attributes"]
        if kv["key"] == A.SERVICE_NAME
    )
    out = tmp_path / "svc.jsonl"
    fake = FakeJaeger(tape_documents(demo_tape))
    with jaeger_server(fake) as url:
        code = main(
            [
                "pull",
                "--jaeger",
                url,
                "--service",
                service,
                "--lookback",
                "30m",
                "--limit",
                "3",
                "--api",
                "classic",
                "-o",
                str(out),
                "--json",
            ]
        )
    assert code == 0
    report = orjson.loads(capsysbinary.readouterr().out)
    assert (report["api"], report["runs"], report["steps"]) == ("classic", 1, 4)
    assert fake.requests == ["/api/traces"] and fake.queries[0]["limit"] == ["3"]
    start, end = int(fake.queries[0]["start"][0]), int(fake.queries[0]["end"][0])
    assert end - start == 30 * 60 * 1_000_000


def test_pull_exit_status(demo_tape: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x.jsonl")
    with jaeger_server(FakeJaeger(tape_documents(demo_tape))) as url:
        assert main(["pull", "--jaeger", url, "--trace-id", "abc", "-o", out]) == 3
        assert "answered 404" in capsys.readouterr().err
        assert main(["pull", "--jaeger", url, "--trace-id", "abc", "--since", "2h", "-o", out]) == 2
        assert "go with --service" in capsys.readouterr().err
        assert main(["pull", "--jaeger", url, "--service", "s", "--lookback", "2 weeks", "-o", out]) == 2
        assert "is not a duration" in capsys.readouterr().err
    assert main(["pull", "--jaeger", f"http://127.0.0.1:{closed_port()}", "--service", "s", "-o", out]) == 3
    with pytest.raises(SystemExit) as usage:
        main(["pull", "--trace-id", "abc", "-o", out])
    assert usage.value.code == 2


@pytest.mark.parametrize("command", ["push", "pull"])
def test_help_names_the_exit_status(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 done; 2 a usage, option or tape error" in text and "; 3 the endpoint" in text


def test_the_installed_command_exits_3_when_the_endpoint_is_down(demo_tape: Path) -> None:
    script = Path(sys.executable).with_name("otel-agent-replay")
    done = subprocess.run(
        [str(script), "push", str(demo_tape), "--endpoint", f"http://127.0.0.1:{closed_port()}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3 and "backend is running" in done.stderr


@pytest.fixture(scope="module")
def real_jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jaeger]:
    server = start_jaeger(tmp_path_factory.mktemp("jaeger"))
    try:
        yield server
    finally:
        server.stop()


def test_push_then_pull_through_the_real_jaeger(
    demo_tape: Path, tmp_path: Path, real_jaeger: Jaeger, capsys: pytest.CaptureFixture[str]
) -> None:
    (run,) = load_tape(demo_tape).runs
    assert main(["push", str(demo_tape), "--endpoint", real_jaeger.otlp_http, "--content"]) == 0
    real_jaeger.v3_trace(run.trace_id, 5)  # stored (Jaeger writes what it received a little later)
    out = tmp_path / "pulled.jsonl"
    capsys.readouterr()
    assert main(["pull", "--jaeger", real_jaeger.query_url, "--trace-id", run.trace_id, "-o", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"pulled 1 trace(s), 5 span(s) from {real_jaeger.query_url}" in text and "1 run(s), 4 step(s)" in text
    (pulled,) = load_tape(out).runs
    assert [s.call_key for s in pulled.steps] == [s.call_key for s in run.steps]
    assert main(["check", str(out)]) == 0  # what Jaeger gives back has no gap and no phantom run
    missing = "0" * 31 + "1"
    assert (
        main(["pull", "--jaeger", real_jaeger.query_url, "--trace-id", missing, "-o", str(tmp_path / "x.jsonl")]) == 3
    )
    assert "not found" in capsys.readouterr().err.lower()
