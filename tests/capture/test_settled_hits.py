"""A gate hit settled where it is (``_linewise.clean_at``), the inert-word rule asked of RE2, and the narrower hint
for JSON inside a string: the one pass still gives the walk's text, byte for byte, on generated configuration,
placeholders under every syntax the rules read, and JSON of every shape inside strings."""

from __future__ import annotations

import json
import random
import string
import sys
from pathlib import Path

import orjson
import pytest
from helpers.secret_corpus import CORPUS

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.capture import _onepass as onepass
from otel_agent_replay.capture._describe import plain_json_names
from otel_agent_replay.capture._linewise import _WHOLE_WORDS, clean_at
from otel_agent_replay.capture._onepass import redact_json

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import redact_corpus

COMPILED = DEFAULT_REDACTOR._compiled


def _walked(value: object) -> str:
    return orjson.dumps(DEFAULT_REDACTOR(value)).decode()


def _decided(value: object) -> str:
    text = orjson.dumps(value).decode()
    out = redact_json(COMPILED, text, plain_json_names(value))
    return _walked(value) if out is None else out


# Placeholders the header, field and parameter rules redact today, and the ones every rule leaves.
REDACTED = [
    "X-Api-Key: ${K}",
    "authorization: ${X}",
    "api_key='${K}'",
    "secret=${S}x",
    "Cookie: ${SESSION}",
    "curl -H 'X-Auth-Token: ${TOKEN}' https://api.example.com",
    "API_TOKEN=${API_TOKEN}",  # a parameter's value is what follows ``=`` up to a separator, placeholder or not
]
KEPT = [
    "DATABASE_PASSWORD: ${DATABASE_PASSWORD}",
    "  DATABASE_PASSWORD: ${DATABASE_PASSWORD}",
    "password = ${DB_PASSWORD}",
    "secret: ${{ secrets.DEPLOY_KEY }}",
]


@pytest.mark.parametrize("line", REDACTED + KEPT)
def test_a_placeholder_line_goes_as_in_the_walk_alone_and_in_a_file(line: str) -> None:
    alone = {"line": line}
    in_file = redact_corpus.config_files(random.Random(line), 2_000)
    assert isinstance(in_file, dict)
    name = sorted(in_file["files"])[0]
    in_file["files"][name] = f"replicas: 3\n{line}\nport: 8080"
    for value in (alone, in_file, [line, {"k": line}]):
        COMPILED.line_cache.clear()
        first = _decided(value)  # decided, then remembered
        assert first == _walked(value) == _decided(value)  # and the same from the memo
        assert (first == orjson.dumps(value).decode()) == (line in KEPT), line


_NAMES = ["DATABASE_PASSWORD", "X-Api-Key", "api_key", "secret", "Authorization", "session_token", "signing_key"]
_NAMES += ["sort_key", "cache_key", "public_key", "next_page_token", "token_count", "auth_url", "cookie_domain"]
_SYNTAX = ["{}: {}", "{} = {}", "{}={}", "{}: '{}'", '"{}": "{}"', "export {}={}", "<{0}>{1}</{0}>", "--{}={}"]
_VALUES = ["${VAR}", "${VAR}x", "$VAR", "{{ .Values.x }}", "changeme", "Zq8vR2mW5tK9pX3n", "5", "null", ""]


def _config(rng: random.Random) -> dict[str, object]:
    files: dict[str, object] = {}
    for n in range(rng.randint(1, 4)):
        lines = []
        for _ in range(rng.randint(1, 12)):
            kind = rng.random()
            if kind < 0.5:
                syntax, name = rng.choice(_SYNTAX), rng.choice(_NAMES)
                value = rng.choice(_VALUES).replace("VAR", rng.choice(_NAMES).upper().replace("-", "_"))
                lines.append(("  " if rng.random() < 0.3 else "") + syntax.format(name, value))
            elif kind < 0.8:
                lines.append(f"{rng.choice(('host', 'port', 'replicas'))}: {rng.randint(1, 9999)}")
            else:
                lines.append("".join(rng.choice(string.ascii_letters + string.digits + " -_") for _ in range(30)))
        files[f"deploy/{n}.yaml"] = "\n".join(lines)
    return {"files": files}


def test_generated_configuration_with_credential_names_goes_as_in_the_walk() -> None:
    rng = random.Random(30)
    for _ in range(300):
        value = _config(rng)
        assert _decided(value) == _walked(value), value
        assert _decided(value) == _walked(value), value  # again, every line now from the memo


def test_a_hit_on_a_clean_line_leaves_its_string_to_a_rule_that_reads_past_the_line() -> None:
    rng = random.Random(31)
    for index, sample in enumerate(CORPUS):
        value = _config(rng)
        files = value["files"]
        assert isinstance(files, dict)
        name = sorted(files)[0]
        # a settled hit ("DATABASE_PASSWORD: ${…}") on one line, the secret on another of the same string
        files[name] = f"DATABASE_PASSWORD: ${{DATABASE_PASSWORD}}\n{files[name]}\nnote {sample.text} end"
        out = _decided(value)
        assert out == _walked(value), (index, sample.name)
        assert sample.secret not in out


def test_a_netrc_is_still_read_whole_when_its_password_line_is_clean_alone() -> None:
    body = "password Zq8vR2mW5tK9pX3n"
    COMPILED.line_cache.clear()
    assert _decided({"a": body}) == _walked({"a": body})  # alone: the memo learns this line
    value = {"netrc": f"machine db.example.com\n  login deploy\n  {body}"}
    out = _decided(value)
    assert "Zq8vR2mW5tK9pX3n" not in out and out == _walked(value)


@pytest.mark.parametrize("word", _WHOLE_WORDS)
@pytest.mark.parametrize("case", [str.lower, str.upper, str.title])
def test_a_hit_in_a_string_holding_a_word_read_whole_is_never_settled_on_its_line(word: str, case: object) -> None:
    assert callable(case)
    text = orjson.dumps({"f": f"DATABASE_PASSWORD: ${{DATABASE_PASSWORD}}\nhost db\n{case(word)} x"}).decode()
    at = text.index("PASSWORD")
    assert not clean_at(COMPILED, text, at, True)
    plain = text.replace(case(word), "x" * len(word))
    assert clean_at(COMPILED, plain, plain.index("PASSWORD"), True)  # the same string without the word: settled


def _json_texts(rng: random.Random) -> list[str]:
    values: list[object] = [[], {}, [1], [-2.5], [True], [False], [None], ["a"], [[1]], [{"a": 1}], {"a": [1]}]
    values += [{"k": rng.random(), "t": "x y"} for _ in range(5)]
    texts = []
    for value in values:
        for indent in (None, 1, 2, "\t"):
            texts.append(json.dumps(value, indent=indent))
        texts.append(" " + json.dumps(value))
        texts.append(json.dumps(value, separators=(", ", ": ")))
    return texts


def test_every_json_text_inside_a_string_is_hinted_and_an_ini_section_is_not() -> None:
    rng = random.Random(30)
    for inner in _json_texts(rng):
        if not inner.lstrip().startswith(("[", "{")):
            continue
        value = {"out": inner.lstrip()}
        text = orjson.dumps(value).decode()
        structure: list[int] = []
        onepass.dirty_positions(COMPILED, text, 0, structure)
        assert structure, inner  # the walk reads it as data
    for section in ("[server]\nhost = x", "[cache]", "{name}", "[Token]\nkey = v", "{{ .Values }}"):
        text = orjson.dumps({"ini": section}).decode()
        structure = []
        onepass.dirty_positions(COMPILED, text, 0, structure)
        assert not structure, section
        assert _decided({"ini": section}) == _walked({"ini": section})


def test_a_small_documents_uuids_blanked_before_the_run_loop_change_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blanking a small document's UUID runs in C only skips look-ups whose verdict is empty: the findings are
    the same as the run-by-run loop's, beside secrets, UUIDs glued to tokens, escapes and hex of other lengths."""
    import uuid

    rng = random.Random(30)
    texts = []
    for index, sample in enumerate(CORPUS):
        ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(6)]
        parts: list[object] = [*ids, f"x-{ids[0]}", f"{ids[1]}\n{sample.text}", ids[2].upper(), f"\\b{ids[3]}"]
        parts += [f"{rng.getrandbits(256):064x}", {"ref": ids[4], "note": f"see {sample.text}"}, f"{ids[5]}{index}"]
        rng.shuffle(parts)
        texts.append(orjson.dumps(parts).decode())
    texts += [orjson.dumps(redact_corpus.step_rows(50, seed)).decode() for seed in range(5)]
    for text in texts:
        if not text.isascii():
            continue
        data = text.encode("ascii")
        monkeypatch.setattr(onepass, "_SMALL", 1 << 20)
        monkeypatch.setattr(onepass, "_BLANK_UUIDS", True)
        small = onepass._run_positions(COMPILED, text, data)
        monkeypatch.setattr(onepass, "_BLANK_UUIDS", False)
        assert small == onepass._run_positions(COMPILED, text, data), text
