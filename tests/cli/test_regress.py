"""diff, stats and check, through main(argv), on tapes made by recording."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import orjson
import pytest

from otel_agent_replay import Redactor, agent_run, record, tool
from otel_agent_replay.cli import main
from otel_agent_replay.cli._check import (
    CHECK_FORMAT,
    CHECK_PROVENANCE,
    CHECK_SECRET,
    CHECK_STALE,
    CHECK_VERSIONS,
)


@tool(side_effect="read_only", version="1")
def quote(sku: str) -> dict[str, object]:
    if sku == "bad":
        raise LookupError("no such sku")
    return {"sku": sku, "price": 10, "quoted_at": time.time()}


@tool(side_effect="external")
def order(sku: str) -> str:
    return "ordered"


def _record(path: Path, sku: str = "a", **options: object) -> Path:
    with record(path, **options), agent_run("shop"):  # type: ignore[arg-type]
        quote(sku)
        quote(sku)  # a retry: the same call again
        with contextlib.suppress(LookupError):
            quote("bad")
        order(sku)
    return path


def test_diff_exit_status_text_and_json(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    a, same, other = _record(tmp_path / "a.jsonl"), _record(tmp_path / "b.jsonl"), _record(tmp_path / "c.jsonl", "z")

    def out() -> str:
        return capsysbinary.readouterr().out.decode()

    assert main(["diff", str(a), str(same)]) == 0  # quoted_at differs but is ignored by default
    assert "do not diverge" in out()
    assert main(["diff", str(a), str(same), "--strict"]) == 1
    assert "quoted_at" in out()
    assert main(["diff", str(a), str(other)]) == 1
    text = out()
    assert "first" in text and "args.sku" in text
    assert main(["diff", str(a), str(other), "--json"]) == 1
    data = orjson.loads(out())
    assert data["same"] is False and data["divergences"][0] == {
        "kind": "args",
        "step": "quote#1",
        "path": "args.sku",
        "left": "a",
        "right": "z",
    }
    assert main(["diff", str(a), str(other), "--ignore", "*sku*"]) == 0
    assert main(["diff", str(a), str(tmp_path / "missing.jsonl")]) == 2


def test_stats_per_tool(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    tape = _record(tmp_path / "a.jsonl")
    assert main(["stats", str(tape), "--json"]) == 0
    rows = {row["tool"]: row for row in orjson.loads(capsysbinary.readouterr().out)}
    assert rows["quote"]["calls"] == 3 and rows["quote"]["errors"] == 1 and rows["quote"]["retries"] == 1
    assert rows["quote"]["error_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert rows["order"]["side_effect"] == "external" and rows["order"]["side_effect_calls"] == 1
    assert rows["quote"]["max_ms"] >= rows["quote"]["mean_ms"] >= 0


def test_stats_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(_record(tmp_path / "a.jsonl"))]) == 0
    out = capsys.readouterr().out
    assert "quote" in out and "33.3%" in out


def test_check_passes_a_clean_tape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(_record(tmp_path / "a.jsonl"))]) == 0
    assert "ok" in capsys.readouterr().out


def test_check_finds_each_kind_with_its_own_exit_bit(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    leaky = tmp_path / "leaky.jsonl"
    with record(leaky, redactor=Redactor(defaults=False)), agent_run("a"):
        quote("AKIA" + "Z7QWERTYUIOPASDF")
    assert main(["check", str(leaky)]) == CHECK_SECRET

    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"resourceSpans": []}\n{not json}\n')
    assert main(["check", str(broken)]) == CHECK_FORMAT

    @tool(side_effect="read_only", version="2", name="quote")
    def quote_v2(sku: str) -> int:
        return 1

    mixed = _record(tmp_path / "mixed.jsonl")
    with record(mixed), agent_run("a"):
        quote_v2("a")
    assert main(["check", str(mixed)]) == CHECK_VERSIONS

    @tool(side_effect="read_only", ttl=0.001)
    def spot_price(sku: str) -> int:
        return 5

    expiring = tmp_path / "expiring.jsonl"
    with record(expiring), agent_run("a"):
        spot_price("a")
    time.sleep(1.1)  # expires_at has second precision
    assert main(["check", str(expiring)]) == CHECK_STALE
    assert main(["check", str(_record(tmp_path / "fresh.jsonl")), "--max-age-days", "0.000000001"]) == CHECK_STALE

    everything = [str(p) for p in (leaky, broken, mixed, expiring)]
    assert main(["check", *everything, "--json"]) == CHECK_SECRET | CHECK_FORMAT | CHECK_VERSIONS | CHECK_STALE
    report = orjson.loads(_last_json(capsysbinary))
    assert {f["kind"] for f in report["findings"]} == {"secret", "format", "versions", "stale"}


def _last_json(capsysbinary: pytest.CaptureFixture[bytes]) -> bytes:
    out = capsysbinary.readouterr().out
    return out[out.rindex(b'{\n  "status"') :]


def test_check_help_states_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "1 (a tape is missing, malformed or empty, its last line is torn, or a run is incomplete" in text
    assert "8 (steps of one tool disagree" in text and "16 (with --provenance" in text


def _check_json(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, list[dict[str, str]]]:
    capsysbinary.readouterr()
    status = main(["check", *argv, "--json"])
    report = orjson.loads(_last_json(capsysbinary))
    assert report["status"] == status
    return status, report["findings"]


def test_check_on_an_empty_a_torn_and_a_good_tape(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    good = _record(tmp_path / "good.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    torn = _record(tmp_path / "torn.jsonl")
    lines = torn.read_bytes().count(b"\n")
    with torn.open("ab") as fh:
        fh.write(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"trace')  # the writer died mid-line

    assert _check_json(capsysbinary, str(good)) == (0, [])
    status, (finding,) = _check_json(capsysbinary, str(empty))
    assert status == CHECK_FORMAT and finding["kind"] == "format" and finding["where"] == f"{empty}:1"
    assert "empty (0 bytes)" in finding["message"]
    status, (finding,) = _check_json(capsysbinary, str(torn))
    assert status == CHECK_FORMAT and finding["where"] == f"{torn}:{lines + 1}"
    assert "unterminated last line" in finding["message"]
    status, findings = _check_json(capsysbinary, str(good), str(empty), str(torn))
    assert status == CHECK_FORMAT and [f["where"] for f in findings] == [f"{empty}:1", f"{torn}:{lines + 1}"]


def test_check_finds_a_run_whose_run_span_never_reached_the_tape(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = _record(tmp_path / "cut.jsonl")
    lines = tape.read_bytes().splitlines(keepends=True)
    run_line = next(i for i, line in enumerate(lines) if b"invoke_agent" in line)
    tape.write_bytes(b"".join(lines[:run_line] + lines[run_line + 1 :]))
    status, (finding,) = _check_json(capsysbinary, str(tape))
    assert status == CHECK_FORMAT and finding["where"] == f"{tape}:1"
    assert "is incomplete: its 4 step(s)" in finding["message"]


def test_check_provenance_and_max_age(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    from otel_agent_replay import model_call

    @model_call(provider="openai", model="gpt-4o")
    def decide(prompt: str) -> dict[str, object]:
        return {"model": "gpt-4o-2024-08-06", "choice": "quote"}

    @model_call()
    def unstamped(prompt: str) -> str:
        return "quote"

    tape = tmp_path / "models.jsonl"
    with record(tape), agent_run("a"):
        decide("x")
        unstamped("y")
    assert _check_json(capsysbinary, str(tape)) == (0, [])
    status, (finding,) = _check_json(capsysbinary, str(tape), "--provenance")
    assert status == CHECK_PROVENANCE and finding["kind"] == "provenance"
    assert "model step unstamped#1" in finding["message"] and "provider" in finding["message"]
    assert "response model" in finding["message"] and finding["where"].startswith(f"{tape}:")
    assert _check_json(capsysbinary, str(tape), "--max-age", "30d")[0] == 0
    status, (finding,) = _check_json(capsysbinary, str(tape), "--max-age", "0.001s")
    assert status == CHECK_STALE and "older than --max-age" in finding["message"]
    with pytest.raises(SystemExit) as bad:
        main(["check", str(tape), "--max-age", "soon"])
    assert bad.value.code == 2


class Account:
    def __init__(self, name: str) -> None:
        self.name = name

    @tool(side_effect="read_only")
    def balance(self, currency: str) -> int:
        return len(self.name)


def test_stats_retries_are_the_same_call_on_the_same_target(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    tape = tmp_path / "accounts.jsonl"
    savings, checking = Account("savings"), Account("checking")
    with record(tape), agent_run("bank"):
        savings.balance("EUR")
        checking.balance("EUR")  # another object: the same arguments, but not a retry
        savings.balance("EUR")  # the same call on the same object again: a retry
    from otel_agent_replay import load_tape
    from otel_agent_replay.core import attributes as A

    targets = [s.attributes[A.TARGET] for s in load_tape(tape).runs[0].steps]
    assert targets == ["Account#1", "Account#2", "Account#1"]
    assert main(["stats", str(tape), "--json"]) == 0
    (row,) = orjson.loads(capsysbinary.readouterr().out)
    assert row["calls"] == 3 and row["retries"] == 1
