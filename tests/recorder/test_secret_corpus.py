"""Issue 22: the corpus of secrets (``helpers.secret_corpus``) in three places of a real recording.

Each value goes through a tool's result (and an event of the application's span inside the tool), a
model request over HTTP (the real ``openai`` SDK against the fake provider on 127.0.0.1, which echoes it
in its answer) and a streamed answer in 4-character deltas. None reaches the tape, the blob folder, OTLP
(content capture on and off), any column of the store, ``show --full`` or ``show --conversation``;
``check`` flags a tape recorded without redaction and never prints the value. Identifiers an agent needs
back come back unchanged through record and replay.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from helpers.model_server import fake_provider
from helpers.otlp_receiver import http_receiver
from helpers.secret_corpus import ALL_SAMPLES, CORPUS, IDENTIFIERS, Sample
from helpers.secrets import json_forms
from opentelemetry import trace

from otel_agent_replay import Redactor, agent_run, load_tape, record, replay, tool
from otel_agent_replay.capture._redact_rules import compile_rules
from otel_agent_replay.capture._scan import _fields, _replace
from otel_agent_replay.cli import main
from otel_agent_replay.cli._check import check_tapes
from otel_agent_replay.core import attributes as A


def _leaks(data: bytes, samples: list[Sample] = ALL_SAMPLES) -> list[str]:
    return [
        sample.name
        for sample in samples
        if any(form in data for secret in sample.forms() for form in json_forms(secret))
    ]


def _store_bytes(db: Path) -> bytes:
    """Every cell of every table of the SQLite store, as bytes."""
    out: list[bytes] = []
    with sqlite3.connect(db) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    out.append(cell if isinstance(cell, bytes) else str(cell).encode("utf-8"))
    assert tables and out
    return b"\n".join(out)


@tool(name="read_file", side_effect="read_only")
def read_file(path: str, content: str) -> str:
    """A file-reading tool: what it returns is the file (the sample's text), which it also logs as a span
    event of the application's own span (a sentence in an event's attribute: issue 30)."""
    with trace.get_tracer("app.reader").start_as_current_span("parse file") as span:
        span.add_event("log", {"detail": f"read {path}: {content}"})
    return content


def _record_corpus(tape: Path, db: Path, endpoint: str, content: bool) -> list[str]:
    """Each sample as a tool result, a model request and a streamed answer; the streamed answers' text."""
    answers: list[str] = []
    with fake_provider() as fp:
        client = openai.OpenAI(base_url=fp.openai_url, api_key="sk-test-" + "corpus0123456789abcdef", max_retries=0)
        recording = record(
            tape, store=str(db), store_full_payloads=True, max_string=96, otlp=endpoint, otlp_content=content
        )
        with recording, agent_run("corpus"):
            for n, sample in enumerate(ALL_SAMPLES):
                read_file(f"/etc/app/{n}.conf", sample.text)
                messages: Any = [{"role": "user", "content": sample.text}]
                client.chat.completions.create(model="gpt-test", messages=messages)
                stream = client.chat.completions.create(model="tiny-deltas", messages=messages, stream=True)
                answers.append("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
    return answers


def _streamed_texts(tape: Path) -> list[str]:
    """The assembled text of each streamed answer on the tape (its deltas joined)."""
    texts = []
    for run in load_tape(tape).runs:
        for step in run.steps:
            result = step.result
            if not (isinstance(result, dict) and result.get("events")):
                continue
            deltas = []
            for event in result["events"]:
                line = event["text"].strip()
                if line.startswith("data: {"):
                    for choice in orjson.loads(line[6:]).get("choices", []):
                        deltas.append(choice.get("delta", {}).get("content") or "")
            texts.append("".join(deltas))
    return texts


@pytest.mark.parametrize("content", [True, False], ids=["otlp-content-on", "otlp-content-off"])
def test_no_corpus_value_reaches_the_tape_blobs_otlp_store_or_show(
    tmp_path: Path, content: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    tape, db = tmp_path / "corpus.jsonl", tmp_path / "store.db"
    with http_receiver() as (endpoint, got):
        live_answers = _record_corpus(tape, db, endpoint, content)
    # the live agent saw every secret (recording changes nothing it gets) ...
    assert all(s.secret in answer for s, answer in zip(ALL_SAMPLES, live_answers, strict=True) if s.secret in s.text)
    # ... and none of them was recorded anywhere
    data = tape.read_bytes()
    assert _leaks(data) == []
    steps = [step for run in load_tape(tape).runs for step in run.steps]
    assert len(steps) == 3 * len(ALL_SAMPLES)
    blobs = [p for p in tape.with_name(tape.name + ".blobs").rglob("*") if p.is_file()]
    assert blobs, "max_string=96 sends the long values to the blob folder"
    assert _leaks(b"\n".join(p.read_bytes() for p in blobs)) == []
    sent = b"".join(request.SerializeToString() for request in got.requests)
    assert len(got.spans()) == 1 + 4 * len(ALL_SAMPLES)  # the run, 3 steps and the application's span each
    events = [e for span in got.spans() for e in span.events if e.name == "log"]
    assert len(events) == len(ALL_SAMPLES) and _leaks(b"".join(e.SerializeToString() for e in events)) == []
    assert _leaks(sent) == []
    assert _leaks(_store_bytes(db)) == []
    capsys.readouterr()
    assert main(["show", str(tape), "--full"]) == 0
    shown = capsys.readouterr().out
    assert "read_file" in shown and _leaks(shown.encode()) == []
    assert main(["show", str(tape), "--conversation", "--full"]) == 0
    conversation = capsys.readouterr().out
    assert "gpt-test" in conversation or "assistant" in conversation.lower()
    assert _leaks(conversation.encode()) == []
    # what was recorded is clean by check's own reading (redaction is idempotent, even on cut values)
    assert [f.where for f in check_tapes([str(tape)]) if f.kind == "secret"] == []


def _streams(url: str) -> list[str]:
    client = openai.OpenAI(base_url=url, api_key="sk-test-" + "corpus0123456789abcdef", max_retries=0)
    texts = []
    for sample in ALL_SAMPLES:
        messages: Any = [{"role": "user", "content": sample.text}]
        stream = client.chat.completions.create(model="tiny-deltas", messages=messages, stream=True)
        texts.append("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
    return texts


def test_streamed_answers_are_redacted_as_assembled_text_with_chunks_kept_consistent(tmp_path: Path) -> None:
    tape = tmp_path / "streams.jsonl"
    with fake_provider() as fp, record(tape), agent_run("streams"):
        live = _streams(fp.openai_url)
    assert all(
        sample.secret in text for sample, text in zip(ALL_SAMPLES, live, strict=True) if sample.secret in sample.text
    )
    recorded = _streamed_texts(tape)  # each stream's deltas joined, as the tape holds them
    assert len(recorded) == len(ALL_SAMPLES)
    assert _leaks("\n".join(recorded).encode()) == []
    assert all("[REDACTED" in text for text in recorded)
    with replay(tape), agent_run("streams"):
        replayed = _streams(fp.openai_url)  # the provider is stopped: every chunk comes from the tape
    assert replayed == recorded


def test_check_flags_each_unredacted_tape_and_never_prints_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tapes = []
    for n, sample in enumerate(ALL_SAMPLES):
        tape = tmp_path / f"raw_{n}.jsonl"
        with record(tape, redactor=Redactor(defaults=False)), agent_run("raw"):
            read_file("/etc/app.conf", sample.text)
        raw = tape.read_bytes()
        assert any(form in raw for form in json_forms(sample.text)), sample.name  # on the tape unredacted
        tapes.append(str(tape))
    flagged = {f.where.rsplit(":", 1)[0] for f in check_tapes(tapes) if f.kind == "secret"}
    assert sorted(flagged) == sorted(tapes)
    capsys.readouterr()
    assert main(["check", *tapes]) != 0
    printed = capsys.readouterr()
    report = (printed.out + printed.err).encode()
    assert report.count(b"holds a secret") >= len(tapes)
    assert _leaks(report) == []


def test_the_corpus_is_mostly_values_the_old_patterns_never_named() -> None:
    """At least 40 of the new corpus's values pass the project's own shapes and field rules untouched."""
    old = compile_rules((), (), True)
    assert old.fields is not None
    missed = []
    for sample in CORPUS:
        text = _fields(old, _replace(old, sample.text), old.fields)
        if sample.secret in text:
            missed.append(sample.name)
    assert len(missed) >= 40, missed
    assert len(ALL_SAMPLES) >= 150


@tool(name="fetch_object", side_effect="read_only")
def fetch_object(ref: str) -> dict[str, Any]:
    return {"ref": ref, "values": list(IDENTIFIERS), "text": "see " + " and ".join(IDENTIFIERS)}


def test_identifiers_come_back_unchanged_through_record_and_replay(tmp_path: Path) -> None:
    assert len(IDENTIFIERS) >= 30
    tape = tmp_path / "ids.jsonl"
    with record(tape), agent_run("ids"):
        live = [fetch_object(ref) for ref in IDENTIFIERS]  # each id reused as an argument
    data = tape.read_bytes()
    assert b"[REDACTED" not in data
    for step, ref in zip(load_tape(tape).runs[0].steps, IDENTIFIERS, strict=True):
        assert step.args == {"ref": ref}
    with replay(tape) as session, agent_run("ids"):
        replayed = [fetch_object(ref) for ref in IDENTIFIERS]
    assert replayed == live
    assert session.stats.hits == len(IDENTIFIERS)
    assert all(r["values"] == IDENTIFIERS for r in replayed)


def test_a_secret_in_a_caller_given_run_id_reaches_no_step(tmp_path: Path) -> None:
    secret = ALL_SAMPLES[0].secret
    tape = tmp_path / "run_id.jsonl"
    with record(tape), agent_run("ids", run_id=f"run-{secret}"):
        read_file("/x", "clean")
    assert secret.encode() not in tape.read_bytes()
    (run,) = load_tape(tape).runs
    assert "[REDACTED" in run.run_id
    assert all(str(step.attributes.get(A.GEN_AI_TOOL_CALL_ID, "")).startswith(run.run_id) for step in run.steps)
