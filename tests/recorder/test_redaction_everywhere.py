"""Issue 9's secrets, placed everywhere a value can reach a span, reach neither the tape, nor the blob
folder, nor OTLP (content capture on and off); ``check`` flags whatever a recording left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.otlp_receiver import http_receiver
from helpers.secrets import (
    AWS_KEY_ID,
    AZURE_SAS_KEY,
    BASIC_CREDENTIALS,
    COOKIE_SESSION,
    FREE_TEXT,
    GITHUB_CLASSIC,
    GITLAB,
    HUGGINGFACE,
    JWT,
    NPM_TOKEN,
    OPENAI_LEGACY,
    PYPI_TOKEN,
    QUERY_TOKEN,
    REPR_PASSWORD,
    SECRETS,
    SENDGRID,
    SLACK_BOT,
    SLACK_WEBHOOK_PATH,
    STRIPE_LIVE,
    URL_AT_PASSWORD,
    assert_no_secret,
    json_forms,
    realistic_value,
)
from opentelemetry import trace
from opentelemetry.trace import Link, Status, StatusCode

from otel_agent_replay import Redactor, agent_run, load_tape, record, replay, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._check import CHECK_SECRET, check_tapes


class Leaky(Exception):
    pass


@tool(name=f"lookup_{HUGGINGFACE}", side_effect="read_only")
def lookup(payload: dict[str, Any], blob: bytes, **options: Any) -> dict[str, Any]:
    return {**realistic_value(), "echo": blob, SENDGRID: "a token as a dict key"}


@tool(side_effect="read_only")
def failing(why: str) -> None:
    raise Leaky({"password": REPR_PASSWORD, "note": f"Authorization: Basic {BASIC_CREDENTIALS}"})


def _agent(tracer: trace.Tracer) -> None:
    with agent_run(
        f"leaky-agent-{SLACK_BOT}",
        task=f"mail the report with {SENDGRID}",
        conversation_id=f"conv-{NPM_TOKEN}",
        agent_version=f"1.0+{PYPI_TOKEN}",
        input=realistic_value(),
    ) as run:
        lookup(
            {STRIPE_LIVE: "a secret as a key", "lines": FREE_TEXT},
            "\n".join(FREE_TEXT).encode(),
            **{f"opt_{GITLAB}": 1, "plain": AWS_KEY_ID},
        )
        with pytest.raises(Leaky):
            failing("x")
        user_attrs = {
            "url.full": f"https://app:{URL_AT_PASSWORD}@api.example.com/v1?access_token={QUERY_TOKEN}",
            "http.request.header.authorization": (f"Basic {BASIC_CREDENTIALS}",),
            "app.note": FREE_TEXT[6],
        }
        linked = trace.get_current_span().get_span_context()
        links = [Link(linked, {"peer.auth": f"Bearer {JWT}", "note": f"see {OPENAI_LEGACY}"})]
        with tracer.start_as_current_span(
            f"POST hooks.slack.com/{SLACK_WEBHOOK_PATH}", attributes=user_attrs, links=links
        ) as span:
            span.add_event("retry", {"detail": f"Cookie: {COOKIE_SESSION}", "token": GITHUB_CLASSIC})
            span.set_status(Status(StatusCode.ERROR, f"send failed: SharedAccessKey={AZURE_SAS_KEY}"))
        run.set_output(realistic_value())


@pytest.mark.parametrize("content", [True, False], ids=["content-on", "content-off"])
def test_no_secret_reaches_the_tape_the_blobs_or_otlp(tmp_path: Path, content: bool) -> None:
    tape = tmp_path / "leaky.jsonl"
    tracer = trace.get_tracer("the.users.app")
    with http_receiver() as (endpoint, got):
        recording = record(tape, store_full_payloads=True, max_string=64, otlp=endpoint, otlp_content=content)
        with recording:
            _agent(tracer)
    data = tape.read_bytes()
    assert_no_secret(data)
    blobs = [p for p in tape.with_name(tape.name + ".blobs").rglob("*") if p.is_file()]
    assert blobs, "max_string=64 should have sent full values to the blob folder"
    for blob in blobs:
        assert_no_secret(blob.read_bytes())
    sent = b"".join(request.SerializeToString() for request in got.requests)
    assert len(got.spans()) == 4  # run, two steps, the user's span
    assert_no_secret(sent)
    # the user's span is on the tape, redacted, not dropped
    assert b"[REDACTED:slack_webhook]" in data and b"[REDACTED:url_credentials]" in data
    assert not [f for f in check_tapes([str(tape)]) if f.kind == "secret"]


def test_replay_matches_a_tape_recorded_with_secrets_in_names_and_keys(tmp_path: Path) -> None:
    tape = tmp_path / "leaky.jsonl"
    with record(tape):
        _agent(trace.get_tracer("the.users.app"))
    with replay(tape) as session:
        _agent(trace.get_tracer("the.users.app"))
    assert session.stats["tape_hits"] == 2 and session.stats["drift_events"] == 0
    assert load_tape(tape).runs[0].steps[0].tool == "lookup_[REDACTED:huggingface_token]"


def test_check_flags_what_a_recording_without_redaction_left(tmp_path: Path) -> None:
    assert len(SECRETS) >= 45
    tape = tmp_path / "unredacted.jsonl"

    @tool(side_effect="read_only")
    def note(text: str) -> str:
        raise ValueError(text)

    with record(tape, redactor=Redactor(defaults=False)), agent_run("a"):
        for text in FREE_TEXT:
            with pytest.raises(ValueError):
                note(text)
    assert any(any(form in tape.read_bytes() for form in json_forms(s)) for s in SECRETS)
    findings = [f for f in check_tapes([str(tape)]) if f.kind == "secret"]
    # every line holds one: its arguments and its error message are both flagged
    flagged_lines = {f.where for f in findings}
    assert len(flagged_lines) == len(FREE_TEXT)
    assert any("the error message" in f.message for f in findings)
    assert main(["check", str(tape)]) == CHECK_SECRET


_IDENTITIES = {
    "service.namespace": "agent-window-0a70e798",
    "k8s.pod.name": "checkout-7d9f8c6b5-x2x9q",
    "host.name": "ip-10-0-17-203.eu-west-1.compute.internal",
    "k8s.pod.uid": "Qm9Xc2Lp7Rt4Vb8Nk3Fj6Hd1Gs5Wa0Ey",  # an opaque uid, high-entropy as it is: kept by its name
}


def test_no_secret_in_the_resource_reaches_the_tape_or_otlp(tmp_path: Path) -> None:
    tape = tmp_path / "resource.jsonl"
    script = f"""
from otel_agent_replay import agent_run, record, tool

@tool(side_effect="read_only")
def ping() -> str:
    return "pong"

with record({str(tape)!r}, otlp={{endpoint!r}}):
    with agent_run("a"):
        ping()
"""
    env = {
        **os.environ,
        "OTEL_RESOURCE_ATTRIBUTES": f"deployment.environment=prod,deploy.api_key=k-1,vcs.token={GITHUB_CLASSIC},"
        + ",".join(f"{k}={v}" for k, v in _IDENTITIES.items()),
        "OTEL_SERVICE_NAME": f"orders-{STRIPE_LIVE}",
    }
    with http_receiver() as (endpoint, got):
        code = script.replace("{endpoint!r}", repr(endpoint))
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        sent = b"".join(request.SerializeToString() for request in got.requests)
    data = tape.read_bytes()
    for where in (data, sent):
        assert GITHUB_CLASSIC.encode() not in where and STRIPE_LIVE.encode() not in where and b"k-1" not in where
        assert b"deployment.environment" in where and b"prod" in where  # the rest of the resource is kept
        for value in _IDENTITIES.values():  # names with random parts: identities, not keys
            assert value.encode() in where, value
    assert len(got.spans()) == 2
    assert load_tape(tape).runs[0].agent_name == "a"


def test_event_names_of_the_users_spans_and_late_run_span_attributes_are_redacted(tmp_path: Path) -> None:
    tape = tmp_path / "late.jsonl"
    tracer = trace.get_tracer("the.users.app")
    with record(tape), agent_run("late"):
        trace.get_current_span().set_attribute("app.deploy_note", f"deployed with {GITHUB_CLASSIC}")
        trace.get_current_span().set_attribute("app.config", "db:\n  password: hunter2-late-value\n")
        with tracer.start_as_current_span("work") as span:
            span.add_event(f"called with {SLACK_BOT}")
    data = tape.read_bytes()
    assert GITHUB_CLASSIC.encode() not in data and SLACK_BOT.encode() not in data
    assert b"hunter2-late-value" not in data
    assert b"[REDACTED:github_token]" in data and b"[REDACTED:slack_token]" in data
