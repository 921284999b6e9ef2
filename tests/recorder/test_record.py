"""record(): where spans go, the application's provider, secrets and big payloads on the tape."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.otlp_receiver import http_receiver
from helpers.rawtape import raw_spans

from otel_agent_replay import ConfigurationError, RecordingWarning, Redactor, agent_run, record, tool
from otel_agent_replay.core import attributes as A


@tool(side_effect="read_only")
def echo(value: Any, headers: Any = None) -> Any:
    return {"echo": value, "headers": headers}


def test_tape_is_written_and_appended_across_recordings(tape: Path) -> None:
    with record(tape) as rec, agent_run("a"):
        echo(1)
    assert rec.stats.spans_written == 2 and rec.stats.spans_dropped == 0
    with record(tape), agent_run("b"):
        echo(2)
    names = [s.name for s in raw_spans(tape)]
    assert names == ["execute_tool echo", "invoke_agent a", "execute_tool echo", "invoke_agent b"]


def test_spans_outside_runs_do_not_reach_the_tape(tape: Path) -> None:
    from opentelemetry import trace

    with record(tape):
        with trace.get_tracer("app").start_as_current_span("unrelated"):
            pass
        with agent_run("a"):
            echo(1)
    assert "unrelated" not in [s.name for s in raw_spans(tape)]


def test_runs_go_to_the_recording_they_started_in(tmp_path: Path) -> None:
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    with record(first):
        with agent_run("outer"):
            echo("outer")
        with record(second), agent_run("inner"):
            echo("inner")
    assert {s.attrs.get(A.GEN_AI_AGENT_NAME) for s in raw_spans(first)} >= {"outer"}
    assert "inner" not in {s.attrs.get(A.GEN_AI_AGENT_NAME) for s in raw_spans(first)}
    assert {s.attrs.get(A.GEN_AI_AGENT_NAME) for s in raw_spans(second)} >= {"inner"}


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="folder"):
        record(tmp_path)


def _fake_secrets() -> dict[str, str]:
    """Realistic-looking fake secrets, built from pieces so this file trips no scanner."""
    return {
        "aws": "AKIA" + "Z7QWERTYUIOPASDF",
        "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "openai": "sk-" + "proj-" + "Xy7" * 12,
        "anthropic": "sk-" + "ant-api03-" + "Qw9" * 12,
        "slack": "xox" + "b-1234567890-0987654321-" + "AbCdEfGhIjKl",
        "google": "AIza" + "SyA1234567890abcdefghijklmnopqrstuv",
        "stripe": "sk_" + "live_" + "51HxYzAbCdEfGhIjKlMnOp",
        "jwt": "eyJ"
        + "hbGciOiJIUzI1NiJ9"
        + ".eyJ"
        + "zdWIiOiIxMjM0NTY3ODkwIn0"
        + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "bearer": "Bearer " + "abc123.def456-ghi789",
        "password": "hunter2-but-longer",
        "cookie": "sessionid=" + "9f8e7d6c5b4a",
        "client_secret": "cs-" + "0a1b2c3d4e5f",
        "pem": "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\n-----END " + "RSA PRIVATE KEY-----",
        "url": "https://" + "admin:s3cr3tpass" + "@db.internal.example/x",
    }


def test_secrets_in_args_results_nested_and_headers_never_reach_the_tape(tape: Path) -> None:
    secrets = _fake_secrets()

    @tool(side_effect="read_only")
    def call_api(url: str, headers: list[list[str]], body: dict[str, Any], api_key: str) -> dict[str, Any]:
        return {
            "token": secrets["github"],
            "nested": {"deeper": [{"password": "p4ss-w0rd!"}]},
            "text": f"use {secrets['openai']} and {secrets['stripe']}",
        }

    with record(tape), agent_run("a", input={"authorization": secrets["bearer"]}) as run:
        call_api(
            secrets["url"],
            [["Authorization", secrets["bearer"]], ["Cookie", secrets["cookie"]], ["Accept", "json"]],
            {
                "creds": {"client_secret": secrets["client_secret"], "note": secrets["aws"]},
                "items": [secrets["slack"], secrets["google"], secrets["jwt"], secrets["pem"]],
            },
            api_key=secrets["anthropic"],
        )
        echo({"password": secrets["password"]}, headers={"Authorization": "x"})
        with pytest.raises(ValueError):
            _failing(secrets["aws"])
        run.set_output({"session": "s-123", "summary": f"key {secrets['google']}"})
    data = tape.read_bytes()
    leaked = [
        name for name, value in {**secrets, "nested": "p4ss-w0rd!", "out": "s-123"}.items() if value.encode() in data
    ]
    assert leaked == []
    assert b"[REDACTED" in data
    # Keys are kept, only values go.
    step = next(s for s in raw_spans(tape) if s.name == "execute_tool call_api")
    args = orjson.loads(step.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert args["headers"][2] == ["Accept", "json"] and "api_key" in args


@tool(side_effect="read_only")
def _failing(value: str) -> None:
    raise ValueError(f"rejected {value}")


def test_redacted_arguments_give_a_stable_call_key(tape: Path) -> None:
    with record(tape), agent_run("a"):
        echo({"password": "one"})
        echo({"password": "two"})
    keys = [s.attrs[A.CALL_KEY] for s in raw_spans(tape) if A.CALL_KEY in s.attrs]
    assert keys[0] == keys[1]


def test_custom_redaction_is_applied(tape: Path) -> None:
    redactor = Redactor(keys=("customer_ref",), patterns=(r"ORD-\d{6}",))
    with record(tape, redactor=redactor), agent_run("a"):
        echo({"customer_ref": "cust-1", "order": "ORD-123456"})
    data = tape.read_bytes()
    assert b"cust-1" not in data and b"ORD-123456" not in data


def test_big_results_are_shortened_hashed_and_stored_by_hash(tape: Path) -> None:
    big = "lorem ipsum " * 5000  # 60 kB

    with record(tape, max_string=1000, store_full_payloads=True), agent_run("a"):
        echo(big)
    step = next(s for s in raw_spans(tape) if s.name == "execute_tool echo")
    result_text = step.attrs[A.GEN_AI_TOOL_CALL_RESULT]
    shortened = orjson.loads(result_text)  # still valid JSON
    assert shortened["echo"].startswith("lorem ipsum") and "truncated 60000 chars" in shortened["echo"]
    assert step.attrs[A.RESULT_TRUNCATED] is True
    full = orjson.dumps({"echo": big, "headers": None}).decode()
    digest = hashlib.sha256(full.encode()).hexdigest()
    assert step.attrs[A.RESULT_SHA256] == digest
    blobs = list((tape.parent / (tape.name + ".blobs")).iterdir())
    assert [b.name for b in blobs] == [f"{digest}.json"]
    assert blobs[0].read_text() == full
    # Long arguments are shortened too, with their hash in the mark so keys stay distinct.
    args = orjson.loads(step.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert "truncated" in args["value"] and len(args["value"]) < 1200


def test_result_json_over_the_byte_cap_becomes_a_valid_json_string(tape: Path) -> None:
    many = [f"item-{i}" for i in range(5000)]
    with record(tape, max_result_bytes=2048), agent_run("a"):
        echo(many)
    step = next(s for s in raw_spans(tape) if s.name == "execute_tool echo")
    value = orjson.loads(step.attrs[A.GEN_AI_TOOL_CALL_RESULT])
    assert isinstance(value, str) and value.startswith('{"echo":["item-0"') and "truncated" in value
    assert step.attrs[A.RESULT_TRUNCATED] is True


_SUBPROCESS_PRELUDE = textwrap.dedent(
    """
    import sys
    from otel_agent_replay import agent_run, record, tool

    @tool(side_effect="read_only")
    def ping(n: int) -> int:
        return n
    """
)


def _run_python(code: str, env: dict[str, str] | None = None) -> str:
    full_env = dict(os.environ, **(env or {}))
    done = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_PRELUDE + textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_a_provider_record_sets_up_the_sdk_one(tape: Path) -> None:
    out = _run_python(
        f"""
        from opentelemetry import trace
        assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
        with record({str(tape)!r}), agent_run("a"):
            ping(1)
        print(type(trace.get_tracer_provider()).__module__)
        """
    )
    assert out.strip() == "opentelemetry.sdk.trace"
    assert [s.name for s in raw_spans(tape)] == ["execute_tool ping", "invoke_agent a"]


def test_the_applications_provider_is_kept_and_added_to(tape: Path) -> None:
    out = _run_python(
        f"""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        mine = TracerProvider()
        memory = InMemorySpanExporter()
        mine.add_span_processor(SimpleSpanProcessor(memory))
        trace.set_tracer_provider(mine)
        with record({str(tape)!r}), agent_run("a"):
            ping(1)
        assert trace.get_tracer_provider() is mine
        print(sorted(s.name for s in memory.get_finished_spans()))
        """
    )
    assert out.strip() == "['execute_tool ping', 'invoke_agent a']"
    assert len(raw_spans(tape)) == 2


def test_a_non_sdk_provider_is_a_clear_configuration_error() -> None:
    out = _run_python(
        """
        from opentelemetry import trace
        from otel_agent_replay import ConfigurationError
        trace.set_tracer_provider(trace.NoOpTracerProvider())
        try:
            with record("never.jsonl"):
                pass
        except ConfigurationError as err:
            print(err)
        """
    )
    assert "NoOpTracerProvider" in out and "SDK" in out


def test_otlp_variables_send_the_same_spans_to_an_endpoint(tape: Path) -> None:
    with http_receiver() as (endpoint, got):
        _run_python(
            f"""
            from opentelemetry import trace
            with record({str(tape)!r}), agent_run("a"):
                ping(1)
            trace.get_tracer_provider().shutdown()
            """,
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "otlp-test"},
        )
    sent = {span_id: span.name for span_id, span in got.by_id().items()}
    on_tape = {s.span_id: s.name for s in raw_spans(tape)}
    assert sent == on_tape and len(sent) == 2
    assert got.resource_values("service.name") == {"otlp-test"}


def test_every_tape_line_parses_as_otlp_json(tape: Path) -> None:
    from opentelemetry.proto_json.trace.v1.trace import TracesData

    @tool(side_effect="write", version="3")
    def store(payload: dict[str, Any]) -> dict[str, Any]:
        return {"stored": True, "size": 4096, "ratio": 0.5}

    with record(tape), agent_run("a", input={"n": 1}):
        echo([1, 2, 3])
        store({"x": "é"})
        with pytest.raises(ValueError):
            _failing("x")
    lines = tape.read_bytes().splitlines()
    assert len(lines) == 4
    for line in lines:
        message = TracesData.from_json(line)  # the generated OTLP JSON classes accept it
        doc = orjson.loads(line)
        assert (
            message.to_dict()["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
            == (doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"])
        )
        (span,) = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert len(span["traceId"]) == 32 and span["traceId"] == span["traceId"].lower()
        int(span["traceId"], 16), int(span["spanId"], 16)
        assert isinstance(span["startTimeUnixNano"], str) and span["startTimeUnixNano"].isdigit()
        assert isinstance(span["kind"], int)
        for attr in span["attributes"]:
            if "intValue" in attr["value"]:
                assert isinstance(attr["value"]["intValue"], str)  # int64 as a decimal string
        if span.get("status", {}).get("code") is not None:
            assert isinstance(span["status"]["code"], int)


def test_full_secret_corpus_never_reaches_the_tape_bytes(tape: Path) -> None:
    from helpers.secrets import SECRETS, assert_no_secret, realistic_value

    @tool(side_effect="read_only")
    def call(payload: dict[str, object], headers: list[list[str]]) -> dict[str, object]:
        return realistic_value()

    assert len(SECRETS) >= 20
    headers = [["Authorization", f"Bearer {SECRETS[0]}"], ["Cookie", "sid=" + SECRETS[1]], ["X-Api-Key", SECRETS[2]]]
    with record(tape), agent_run("a", input=realistic_value()) as run:
        call(realistic_value(), headers)
        run.set_output(realistic_value())
    assert_no_secret(tape.read_bytes())


_MULTI_WRITER = textwrap.dedent(
    """
    import sys
    from otel_agent_replay import agent_run, record, tool

    @tool(side_effect="read_only")
    def step(who: str, i: int) -> str:
        return who * 500

    path, who = sys.argv[1], sys.argv[2]
    for r in range(5):
        with record(path), agent_run("w", run_id=f"{who}-{r}"):
            for i in range(40):
                step(who, i)
    """
)


def test_four_processes_recording_to_one_tape(tape: Path) -> None:
    from otel_agent_replay import load_tape

    tape.parent.mkdir(parents=True)
    procs = [subprocess.Popen([sys.executable, "-c", _MULTI_WRITER, str(tape), f"p{n}"]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    loaded = load_tape(tape)
    assert len(loaded.runs) == 20
    for run in loaded.runs:
        assert run.complete and [s.seq for s in run.steps] == list(range(1, 41))
    assert len(tape.read_bytes().splitlines()) == 20 * 41


_KILLED = textwrap.dedent(
    """
    import sys
    from otel_agent_replay import agent_run, record, tool

    @tool(side_effect="read_only")
    def step(i: int) -> str:
        print(i, flush=True)  # i-1 has ended, so it is on the tape
        return "y" * 2000

    with record(sys.argv[1]), agent_run("doomed", run_id="doomed"):
        i = 0
        while True:
            i += 1
            step(i)
    """
)


def test_sigkill_mid_recording_leaves_a_tape_that_loads(tape: Path) -> None:
    import signal
    import time

    from otel_agent_replay import load_tape

    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(tape)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    started = 0
    deadline = time.monotonic() + 60
    while started < 300 and time.monotonic() < deadline:
        started = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    announced = started + sum(1 for _ in proc.stdout)  # steps that began before the kill
    (run,) = load_tape(tape).runs
    assert not run.complete and run.run_id == "doomed"  # the run span never ended
    seqs = [s.seq for s in run.steps]
    assert seqs == list(range(1, len(seqs) + 1))  # nothing missing before the kill
    # Every step that ended before the kill is there: at most the one in flight is lost.
    assert len(seqs) >= announced - 2


def test_a_tape_replaced_while_recording_is_reopened_and_the_recording_says_so(tape: Path) -> None:
    @tool(side_effect="read_only")
    def look(n: int) -> int:
        return n

    with (
        pytest.warns(RecordingWarning, match=r"deleted or replaced while it was being recorded .* 2 span\(s\)"),
        record(tape),
        agent_run("agent"),
    ):
        look(1)
        look(2)
        moved = tape.with_name("moved.jsonl")
        os.replace(tape, moved)
        look(3)
    assert [s.name for s in raw_spans(moved)] == ["execute_tool look", "execute_tool look"]
    assert [s.name for s in raw_spans(tape)] == ["execute_tool look", "invoke_agent agent"]


@pytest.mark.parametrize(
    "cut", [pytest.param("0", id="to-zero"), pytest.param("os.path.getsize(p) // 2", id="to-half")]
)
def test_a_tape_cut_short_by_another_process_mid_recording_is_warned_and_later_runs_are_whole(
    tape: Path, cut: str
) -> None:
    from otel_agent_replay import load_tape

    @tool(side_effect="read_only")
    def look(n: int) -> int:
        return n

    with (
        pytest.warns(RecordingWarning, match=r"cut short or overwritten by another process") as seen,
        record(tape) as rec,
    ):
        for i in range(20):
            with agent_run("agent", run_id=f"run-{i:02d}"):
                look(i)
            if i == 9:  # `truncate -s` from another process, mid-recording
                code = f"import os, sys; p = sys.argv[1]; os.truncate(p, {cut})"
                subprocess.run([sys.executable, "-c", code, str(tape)], check=True)
    loaded = load_tape(tape)
    after = [r for r in loaded.runs if r.run_id >= "run-10"]
    assert [r.run_id for r in after] == [f"run-{i:02d}" for i in range(10, 20)] and all(r.complete for r in after)
    before_left = len(raw_spans(tape)) - 20  # lines from before the cut still on the tape
    assert rec.stats.changed_underneath == 1 and rec.stats.spans_lost == 20 - before_left
    assert f"{rec.stats.spans_lost} span(s)" in str(seen[0].message)
