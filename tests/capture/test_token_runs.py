"""The one pass's run loop: the C module (``_runs_native``) gives what the Python loop gives, on generated text,
on the redaction corpus's documents and on the verdicts a real pass leaves; and the package is built with it."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_agent_replay.capture import DEFAULT_REDACTOR
from otel_agent_replay.capture import _onepass as onepass
from otel_agent_replay.capture import _tokenruns as tokenruns

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import redact_corpus

# Token characters, the bytes that end a run in JSON text, and the escapes' backslash.
_ALPHABET = "abcXYZ0189+/=_-.~" + ' "\\:,{}[]\n%&@'


def _native() -> object:
    from otel_agent_replay.capture import _runs_native

    return _runs_native.runs


def test_the_package_is_built_with_the_c_loop() -> None:
    assert tokenruns.NATIVE, "capture/_runs_native is not built: `pip install -e .` with a C compiler (gcc) at hand"
    assert tokenruns.runs is _native()


def _both(data: bytes, verdicts: dict[str, tuple[int, ...]], min_len: int = 16) -> tokenruns.RunsFound:
    mapped = data.translate(onepass._TO_RUNS)
    native = _native()
    assert callable(native)
    got = native(mapped, data, min_len, verdicts)
    assert got == tokenruns.python_runs(mapped, data, min_len, verdicts)
    return got  # type: ignore[no-any-return]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_ALPHABET), st.integers(1, 30)), max_size=60),
    st.integers(1, 24),
    st.randoms(use_true_random=False),
)
def test_generated_text_gives_the_same_runs_keys_and_verdicts(
    pieces: list[tuple[str, int]], min_len: int, rng: random.Random
) -> None:
    data = "".join(char * count for char, count in pieces).encode("ascii")
    unknown, _ = _both(data, {}, min_len)
    # every key the loop reported, then known: some clean, some with findings
    verdicts = {key: (() if rng.random() < 0.5 else (rng.randrange(3),)) for _, key in unknown}
    again_unknown, dirty = _both(data, verdicts, min_len)
    assert again_unknown == []
    assert [at for at, _ in dirty] == [at for at, key in unknown if verdicts[key]]


def test_the_corpus_documents_give_the_same_runs_before_and_after_a_real_pass() -> None:
    for name, document in redact_corpus.shapes(size=30_000).items():
        data = orjson.dumps(document)
        assert _both(data, {}) is not None, name
        DEFAULT_REDACTOR.redact_json(data.decode())  # the pass leaves its verdicts for these runs
        verdicts = dict(onepass._RUN_VERDICTS)
        _both(data, verdicts)


def test_a_run_at_the_start_and_at_the_end_is_keyed_as_the_python_loop_keys_it() -> None:
    data = b"A1b2C3d4E5f6G7h8I9j0 x \\nK1l2M3n4O5p6Q7r8S9"
    unknown, _ = _both(data, {})
    assert [key for _, key in unknown] == [" A1b2C3d4E5f6G7h8I9j0", "\\nK1l2M3n4O5p6Q7r8S9"]


@pytest.mark.parametrize("runs", [tokenruns.python_runs, _native()])
def test_text_that_is_not_ascii_or_not_of_one_length_is_refused(runs: object) -> None:
    assert callable(runs)
    with pytest.raises(ValueError):
        runs(b"a" * 20, b"b" * 19, 16, {})
    for at in range(21):  # a byte of 128 or more anywhere: in a word of eight bytes, or in the tail after them
        data = bytearray(b"b" * 21)
        data[at] = 0xC3
        with pytest.raises(ValueError):
            runs(b"a" * 21, bytes(data), 16, {})
