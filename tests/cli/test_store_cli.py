"""ingest, report, golden and pull --db through main(argv): output, --json, exit status (1, 2 usage, 3 store)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from helpers.jaeger_json import tape_documents
from helpers.jaeger_server import FakeJaeger, jaeger_server
from helpers.store_agents import record_support

from otel_agent_replay import load_tape
from otel_agent_replay.cli import main
from otel_agent_replay.cli._demo import record_demo
from otel_agent_replay.store import open_store


@pytest.fixture
def tapes(tmp_path: Path) -> tuple[Path, Path]:
    customers = ["c1", "c2", "bad3"]
    return record_support(tmp_path / "v10.jsonl", "1.0", customers), record_support(
        tmp_path / "v11.jsonl", "1.1", customers
    )


def test_ingest_is_idempotent_and_report_compares_versions(
    tapes: tuple[Path, Path], store_location: str, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    def out() -> str:
        return capsysbinary.readouterr().out.decode()

    assert main(["ingest", *map(str, tapes), "--db", store_location, "--tag", "support"]) == 0
    text = out()
    assert f"ingested {tapes[0]}:" in text and "otel-agent-replay report --db" in text
    with open_store(store_location) as store:
        counts = store.counts()
        assert all("support" in s.tags for s in store.sessions())
    assert main(["ingest", str(tapes[0]), "--db", store_location, "--json"]) == 0
    (again,) = orjson.loads(out())
    assert again["tape"] == str(tapes[0]) and again["sessions"] >= 1
    with open_store(store_location) as store:
        assert store.counts() == counts, "ingesting a tape again adds no row"

    assert main(["report", "--db", store_location]) == 0
    md = out()
    assert md.startswith("### Agent evidence report") and "| `1.0` |" in md and "| `1.1` |" in md
    assert main(["report", "--db", store_location, "--compare", "1.0", "1.1", "--json"]) == 0
    report = orjson.loads(out())
    assert report["comparison"]["metrics"]["out_of_bounds_calls"]["change"] == "worse"
    assert main(["report", "--db", store_location, "--compare", "1.0", "1.1", "--threshold", "retry_rate=0"]) == 1
    assert "❌ **regressed**" in out()
    assert main(["report", "--db", store_location, "--by", "agent_name", "--format", "csv"]) == 0
    assert out().startswith("agent_name,sessions,")


def test_golden_writes_tapes_that_load(
    tapes: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "evidence.db"
    assert main(["ingest", *map(str, tapes), "--db", str(db), "--tag", "support"]) == 0
    capsys.readouterr()
    out_dir = tmp_path / "golden"
    assert main(["golden", "--db", str(db), "--tag", "support", "--per-tag", "3", "--out", str(out_dir)]) == 0
    text = capsys.readouterr().out
    assert "otel-agent-replay regress" in text
    written = sorted(out_dir.glob("*.jsonl"))
    assert 1 <= len(written) <= 3
    assert all(len(load_tape(p).runs) == 1 for p in written)
    assert main(["golden", "--db", str(db), "--tag", "none-such", "--out", str(out_dir)]) == 2
    assert "no finished sessions tagged 'none-such'" in capsys.readouterr().err


def test_exit_status_of_the_store_commands(
    tapes: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "evidence.db"
    assert main(["ingest", str(tmp_path / "missing.jsonl"), "--db", str(db)]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert main(["ingest", str(tapes[0]), "--db", "mysql://x/y"]) == 2
    assert "unknown scheme 'mysql'" in capsys.readouterr().err
    assert main(["report", "--db", str(db), "--threshold", "pass_rate=0.1"]) == 2
    assert "give --compare" in capsys.readouterr().err
    assert main(["ingest", str(tapes[0]), "--db", str(db)]) == 0
    assert main(["report", "--db", str(db), "--compare", "1.0", "9.9"]) == 2
    assert "no sessions of '9.9'" in capsys.readouterr().err
    # A PostgreSQL server that is not there: the store cannot be opened, exit 3.
    assert main(["report", "--db", "postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=2"]) == 3
    assert "error:" in capsys.readouterr().err
    if os.geteuid() != 0:  # root reads a file without permissions; the unreachable server above covers 3
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert main(["ingest", str(tapes[0]), "--db", str(locked / "e.db")]) == 3


def test_pull_with_db_ingests_what_it_pulled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo = record_demo(tmp_path / "demo").tape
    (run,) = load_tape(demo).runs
    db = tmp_path / "evidence.db"
    with jaeger_server(FakeJaeger(tape_documents(demo))) as url:
        argv = ["pull", "--jaeger", url, "--trace-id", run.trace_id, "-o", str(tmp_path / "p.jsonl"), "--db", str(db)]
        assert main(argv) == 0
    assert f"ingested 1 session(s), 3 tool call(s) into {db}" in " ".join(capsys.readouterr().out.split())
    with open_store(db) as store:
        assert [s.session_id for s in store.sessions()] == [run.run_id]


def test_ingest_refuses_a_different_run_under_a_stored_run_id(
    tapes: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "evidence.db")
    first = load_tape(tapes[0]).runs[0].run_id
    second = load_tape(tapes[1]).runs[0].run_id
    forged = tmp_path / "forged.jsonl"  # the 1.1 recording of c1, its run id changed to the 1.0 one's
    forged.write_text(tapes[1].read_text(encoding="utf-8").replace(second, first), encoding="utf-8")
    assert main(["ingest", str(tapes[0]), "--db", db]) == 0
    capsys.readouterr()
    assert main(["ingest", str(forged), "--db", db, "--json"]) == 3
    captured = capsys.readouterr()
    assert captured.out == "" and first in captured.err and str(forged) in captured.err
    with open_store(db) as store:
        assert store.session(first).agent_version == "1.0"  # not replaced by the 1.1 run
