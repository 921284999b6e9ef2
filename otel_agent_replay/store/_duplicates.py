"""Two different runs under one run id: found before anything of a tape is written, and refused.

A session is its ``run_id``, and ingest is idempotent: the same run read again (from the same
tape, a copy of it, the tape that completes an aborted run, the steps ``new_episodes`` appended)
is the same rows. A run id can still be shared by two different runs: a run id the application
chose itself and used twice, a tape copied and edited. Upserting the second over the first would
replace it without a word, so before writing, each run of the tape whose id is already stored is
compared with what the store holds of it: the trace, the run span, and every span both have (the
same span must be the same line; a step's place, its kind and seq, must be the same span). A
difference refuses the whole tape with a ``StoreError`` naming the run ids, both tapes and the
difference; nothing of the tape is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson

from otel_agent_replay.core import StoreError

from ._backend import Tx, chunks
from ._rows import SessionRows

__all__ = ["refuse_duplicate_runs"]

_SHOWN: Final = 5


def _differences(new: SessionRows, trace_id: str, extra: dict[str, Any], stored: list[tuple[Any, ...]]) -> str | None:
    """How ``new`` differs from the stored run of the same id, or None when it is the same run."""
    new_trace = new.session[1]
    if trace_id and new_trace and trace_id != new_trace:
        return f"trace {trace_id} there, {new_trace} here"
    new_span = orjson.loads(new.session[11]).get("span_id")
    old_span = extra.get("span_id")
    if old_span and new_span and old_span != new_span:
        return f"run span {old_span} there, {new_span} here"
    lines = {(row[0], row[1]): row[4] for row in stored}
    places = {(row[2], row[3]): row[1] for row in stored if row[3] is not None}
    for span in new.spans:
        trace, span_id, kind, seq, line = span[0], span[1], span[3], span[4], span[8]
        old_line = lines.get((trace, span_id))
        if old_line is not None and old_line != line:
            return f"span {span_id}{'' if seq is None else f' (seq {seq})'} has other content"
        if old_line is None and seq is not None:
            other = places.get((kind, seq))
            if other is not None and other != span_id:
                return f"seq {seq} is span {other} there, {span_id} here"
    return None


def refuse_duplicate_runs(tx: Tx, rows: Sequence[SessionRows], source: str, location: str) -> None:
    """Raise ``StoreError`` when a run of the tape at ``source`` is a different run under a stored run id."""
    by_id = {r.session[0]: r for r in rows}
    known: dict[str, tuple[str, dict[str, Any]]] = {}
    for part in chunks(list(by_id), 500):
        marks = ", ".join("?" * len(part))
        for sid, trace_id, extra in tx.fetchall(
            f"SELECT session_id, trace_id, extra FROM agent_session WHERE session_id IN ({marks})", list(part)
        ):
            known[sid] = (trace_id or "", orjson.loads(extra) if extra else {})
    if not known:
        return
    spans: dict[str, list[tuple[Any, ...]]] = {sid: [] for sid in known}
    for part in chunks(list(known), 500):
        marks = ", ".join("?" * len(part))
        for row in tx.fetchall(
            f"SELECT trace_id, span_id, kind, seq, otlp_json, session_id FROM tape_span WHERE session_id IN ({marks})",
            list(part),
        ):
            spans[row[5]].append(row)
    found = []
    for sid, (trace_id, extra) in known.items():
        why = _differences(by_id[sid], trace_id, extra, spans[sid])
        if why is not None:
            found.append(f"run {sid} (stored from {extra.get('tape') or 'a tape'}: {why})")
    if not found:
        return
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    raise StoreError(
        f"{source}: {len(found)} run(s) carry the id of a different run already in the evidence store {location!r}: "
        f"{'; '.join(found[:_SHOWN])}{more}. Nothing of {source} was stored: one session never holds two runs. "
        "Give the runs their own ids (agent_run(run_id=...) once per run, or leave run_id to be minted), or, if "
        "this tape is meant to replace the stored run, delete that session first (Store.delete_session)"
    )
