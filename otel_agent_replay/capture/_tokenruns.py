"""The runs of token characters in a document's text, each looked up in the one pass's verdicts.

``_onepass`` judges every run of 16 or more token characters by the character before it and the run, and
remembers the verdict (a tuple of offsets in the run where a rule may find a secret; empty for most runs:
paths, hosts, digests, names). Finding the runs and looking each up is the one loop of the pass that runs
once per run; on text with many runs (configuration files: 2,000 in 100 KB) it is the pass's largest cost
in the interpreter. ``runs`` does it in C (``_runs_native``, built with the package when a C compiler is
at hand) and ``python_runs`` is the same loop in Python, used when the module is not built. Both give, for
the runs in order, ``unknown``: ``(at, key)`` of each run whose key has no verdict yet, and ``dirty``:
``(at, verdict)`` of each run whose verdict is not empty. What a run is (the translation table that makes
``mapped``) and what it holds (the verdicts) stay in Python, in ``_onepass``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = ["NATIVE", "RunsFound", "python_runs", "run_spans", "runs"]

Verdicts = dict[str, tuple[int, ...]]
RunsFound = tuple[list[tuple[int, str]], list[tuple[int, tuple[int, ...]]]]


def run_spans(mapped: bytes, min_len: int) -> list[tuple[int, int]]:
    """The (start, end) of every stretch of at least ``min_len`` bytes ``a`` in ``mapped`` (a text's ASCII bytes
    translated so that a token character is ``a`` and every other byte a space)."""
    out: list[tuple[int, int]] = []
    append = out.append
    needle = b"a" * min_len
    find = mapped.find
    at = find(needle)
    while at >= 0:
        end = find(b" ", at + min_len)
        if end < 0:
            end = len(mapped)
        append((at, end))
        at = find(needle, end)
    return out


def python_runs(mapped: bytes, data: bytes, min_len: int, verdicts: Verdicts) -> RunsFound:
    """The runs of at least ``min_len`` bytes ``a`` in ``mapped`` (``run_spans``; ``data``: the text's ASCII
    bytes that ``mapped`` translates), each keyed by ``data[at - 1:end]`` as text (``" " + data[:end]`` at 0)
    and looked up in ``verdicts``: what ``_runs_native.runs`` gives."""
    if len(mapped) != len(data) or min_len < 1:
        raise ValueError("runs: mapped and data must have one length, min_len at least 1")
    text = data.decode("ascii")
    unknown: list[tuple[int, str]] = []
    dirty: list[tuple[int, tuple[int, ...]]] = []
    get = verdicts.get
    for at, end in run_spans(mapped, min_len):
        key = text[at - 1 : end] if at else " " + text[:end]
        verdict = get(key)
        if verdict is None:
            unknown.append((at, key))
        elif verdict:
            dirty.append((at, verdict))
    return unknown, dirty


def _native() -> Callable[[bytes, bytes, int, Verdicts], RunsFound] | None:
    try:
        from ._runs_native import runs as native_runs
    except ImportError:
        return None
    return native_runs


_NATIVE_RUNS: Final = _native()
NATIVE: Final = _NATIVE_RUNS is not None
"""Whether the C loop is built (``pip install`` compiles it where a C compiler is at hand)."""
runs: Final = _NATIVE_RUNS or python_runs
