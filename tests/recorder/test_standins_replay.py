"""Stand-ins on a real recording and its replay (issue 30, items 2, 6 and 7's key names).

A validating agent checks the shape of an id (prefix, length, classes) before using it: for ids that
redaction replaces it takes the recorded path in a strict replay. A value redacted in a result and echoed in
a later argument replays strictly. ``check`` passes the tape of stand-ins and still flags a real secret put
into it. A failing processor redacts its value, warns once and leaves the tape loadable; processors never see
the tape's structure. Every value is generated here.
"""

from __future__ import annotations

import random
import re
import string
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.secret_corpus import CORPUS

from otel_agent_replay import Redactor, agent_run, load_tape, record, replay, tool
from otel_agent_replay.cli._check import check_tapes
from otel_agent_replay.core import RecordingWarning
from otel_agent_replay.core import attributes as A

_rng = random.Random(3030)
_ALNUM = string.ascii_letters + string.digits


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


# (the shape an agent validates, a generated id of that shape): vendor formats and bare high-entropy ids
SHAPES: list[tuple[str, str]] = [
    (r"ghp_[A-Za-z0-9]{36}", "ghp_" + _pick(_ALNUM, 36)),
    (r"sk-proj-[A-Za-z0-9_-]{100}", "sk-proj-" + _pick(_ALNUM + "_-", 100)),
    (
        r"xoxb-[0-9]{12}-[0-9]{12}-[A-Za-z0-9]{24}",
        f"xoxb-{_pick(string.digits, 12)}-{_pick(string.digits, 12)}-" + _pick(_ALNUM, 24),
    ),
    (r"AKIA[A-Z0-9]{16}", "AKIA" + _pick(string.ascii_uppercase + "234567", 16)),
    (r"sb_secret_[A-Za-z0-9_-]{31}", "sb_secret_" + _pick(_ALNUM, 31)),
    (r"[A-Za-z0-9]{48}", _pick(_ALNUM, 48)),  # a bare id the high-entropy layer replaces
]


@tool(name="issue_credential", side_effect="read_only")
def issue_credential(kind: int) -> dict[str, Any]:
    shape, value = SHAPES[kind]
    return {"credential": value, "shape": shape, "message": f"your new credential is {value}"}


@tool(name="use_credential", side_effect="read_only")
def use_credential(credential: str) -> str:
    return f"used one of {len(credential)} characters"


@tool(name="report_malformed", side_effect="read_only")
def report_malformed(kind: int) -> str:
    return "malformed"


def _validating_agent() -> list[str]:
    """Checks each credential's shape, then uses it (the recorded path) or reports it (another path)."""
    out = []
    for kind in range(len(SHAPES)):
        got = issue_credential(kind)
        credential = got["credential"]
        if re.fullmatch(got["shape"], credential) and credential in got["message"]:
            out.append(use_credential(credential))
        else:
            out.append(report_malformed(kind))
    return out


def test_a_validating_agent_takes_the_recorded_path_and_an_echoed_stand_in_replays(tmp_path: Path) -> None:
    tape = tmp_path / "standins.jsonl"
    with record(tape), agent_run("validator"):
        live = _validating_agent()
    assert all(answer.startswith("used") for answer in live)
    data = tape.read_bytes()
    assert not [value for _, value in SHAPES if value.encode() in data], "no id reaches the tape"
    steps = load_tape(tape).runs[0].steps
    uses = [s for s in steps if s.tool == "use_credential"]
    assert len(uses) == len(SHAPES)
    for step, (shape, value) in zip(uses, SHAPES, strict=True):
        echoed = step.args["credential"]
        assert echoed != value and re.fullmatch(shape, echoed), "the argument holds the stand-in, of the id's shape"
        assert echoed in orjson.loads(step.attributes[A.STAND_INS])
    # strict replay (the default): every recorded step used, none missing
    with replay(tape), agent_run("validator"):
        again = _validating_agent()
    assert again == live


@tool(name="fetch_config", side_effect="read_only")
def fetch_config() -> dict[str, str]:
    return {"text": SECRET_TEXT}


@tool(name="send_with", side_effect="read_only")
def send_with(header: str) -> str:
    return "sent"


SECRET = "ghp_" + _pick(_ALNUM, 36)
SECRET_TEXT = f"GITHUB_TOKEN={SECRET}"


def _echo_agent() -> str:
    config = fetch_config()
    token = config["text"].split("=", 1)[1]
    return send_with(f"Authorization: token {token}")


def test_a_value_redacted_in_a_result_and_echoed_in_a_later_argument_replays_strictly(tmp_path: Path) -> None:
    tape = tmp_path / "echo.jsonl"
    with record(tape), agent_run("echo"):
        _echo_agent()
    assert SECRET.encode() not in tape.read_bytes()
    fetched, sent = load_tape(tape).runs[0].steps
    stand_in = fetched.result["text"].split("=", 1)[1]
    assert stand_in in sent.args["header"], "the same stand-in in the result and the later argument"
    with replay(tape), agent_run("echo"):
        assert _echo_agent() == "sent"
    # a live call carrying the real secret matches the recorded one too (call keys are on the redaction)
    with replay(tape), agent_run("echo"):
        fetch_config()
        assert send_with(f"Authorization: token {SECRET}") == "sent"


def test_check_passes_a_tape_of_stand_ins_and_flags_a_real_secret_put_into_it(tmp_path: Path) -> None:
    tape = tmp_path / "corpus.jsonl"

    @tool(name="read_text", side_effect="read_only")
    def read_text(n: int) -> str:
        return CORPUS[n].text

    with record(tape), agent_run("reader"):
        for n in range(len(CORPUS)):
            read_text(n)
    assert [f.where for f in check_tapes([str(tape)]) if f.kind == "secret"] == []
    stand_ins: dict[str, str] = {}
    for step in load_tape(tape).runs[0].steps:
        stand_ins.update(orjson.loads(step.attributes.get(A.RESULT_STAND_INS) or "{}"))
    assert len(stand_ins) >= len(CORPUS) // 2
    # the same tape with one stand-in swapped back for a real secret: check names it
    lines = tape.read_text().splitlines()
    github = next(s for s in stand_ins if s.startswith("ghp_") or s.startswith("hvs.")) if stand_ins else ""
    at = next(i for i, line in enumerate(lines) if github in line and A.RESULT_STAND_INS not in line.split(github)[0])
    real = github[:4] + _pick(_ALNUM, len(github) - 4)
    lines[at] = lines[at].replace(github, real, 1)
    (tmp_path / "leaky.jsonl").write_text("\n".join(lines) + "\n")
    found = [f for f in check_tapes([str(tmp_path / "leaky.jsonl")]) if f.kind == "secret"]
    assert found and all(real not in f.message for f in found)


def _returns_a_set(value: object) -> object:
    return {1, 2}


def _returns_an_object(value: object) -> object:
    return object()


def _raises(value: object) -> object:
    raise RuntimeError("a processor bug")


@pytest.mark.parametrize("processor", [_returns_a_set, _returns_an_object, _raises])
def test_a_failing_processor_redacts_its_value_warns_once_and_the_tape_loads(tmp_path: Path, processor: Any) -> None:
    tape = tmp_path / "processed.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with record(tape, redactor=Redactor(processors=(processor,))), agent_run("p", input={"q": 1}):
            for kind in range(3):
                issue_credential(kind)
    said = [w for w in caught if issubclass(w.category, RecordingWarning) and processor.__name__ in str(w.message)]
    assert len(said) == 1, "warned once, not once a value"
    run = load_tape(tape).runs[0]  # loads: the schema version and the ids never went through the processor
    assert f'"{A.SCHEMA_VERSION_ATTR}","value":{{"stringValue":"{A.SCHEMA_VERSION}"}}' in tape.read_text()
    assert [s.tool for s in run.steps] == ["issue_credential"] * 3
    assert all(s.result == "[REDACTED:processor_error]" for s in run.steps)
    assert len({s.step_id for s in run.steps}) == 3 and all(":" in s.call_key for s in run.steps)


def test_processors_see_values_never_the_tapes_structure(tmp_path: Path) -> None:
    seen: list[object] = []

    def watch(value: object) -> object:
        seen.append(value)
        return value

    tape = tmp_path / "watched.jsonl"
    with record(tape, redactor=Redactor(processors=(watch,))), agent_run("w", input={"q": 1}):
        issue_credential(0)
    run = load_tape(tape).runs[0]
    structure = {
        run.run_id,
        A.SCHEMA_VERSION,
        *(s.step_id for s in run.steps),
        *(s.call_key for s in run.steps),
        *(str(s.seq) for s in run.steps),
    }
    text = [v for v in seen if isinstance(v, str)]
    assert not structure & set(text)
    assert any(isinstance(v, dict) and "credential" in v for v in seen), "the tool's result went through it"


def _word(n: int) -> str:
    return "".join(_rng.choice(string.ascii_lowercase) for _ in range(n))


@pytest.mark.parametrize("name", ["signing_key", "client_secret", "X-Api-Key", "webhookSigningKey", "encryption_key"])
def test_a_key_naming_a_credential_makes_its_value_a_secret(tmp_path: Path, name: str) -> None:
    value = _word(12)  # a plain word: only its key says it is a secret
    out = Redactor()({name: value, "repr": f"Config({name}='{value}')"})
    assert isinstance(out, dict) and out[name] == "[REDACTED]" and value not in orjson.dumps(out).decode()


@pytest.mark.parametrize(
    "name", ["sort_key", "public_key", "primary_key", "Idempotency-Key", "partition_key", "key_id"]
)
def test_a_key_naming_data_keeps_its_value(name: str) -> None:
    value = _word(12)
    assert Redactor()({name: value}) == {name: value}
