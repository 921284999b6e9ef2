"""A golden set: sessions sampled per tag from the store, written back as tapes.

Per tag, the finished sessions (a session whose run span never reached a tape cannot be replayed:
it is left out) fall into three strata:

- ``failure``: the run failed, or an evaluation of it did not pass;
- ``edge``: it succeeded, but a tool call failed or timed out, was answered out of bounds, or was
  a retry, or the session is tagged ``edge``;
- ``success``: the rest.

Sessions are taken in turn from failure, edge and success (newest first within each), skipping a
session whose input (``input_hash``) the set already has, until ``per_tag`` are chosen; when a
stratum runs out the others fill in. The choice is repeatable for the same store.

Each chosen session becomes one tape: its stored spans as OTLP JSON lines, steps in seq order and
the run span last, as the tape exporter writes them. The file name is made from the tag and the
agent name (letters, digits, ``._-`` only, cut to 40 characters) and a hash of the session id,
and is checked to stay inside ``out_dir``. Files are written whole (a temporary file renamed).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from otel_agent_replay.core import ConfigurationError

from ._rows import OUT_OF_BOUNDS
from ._store import SessionRow, Store

__all__ = ["GoldenTape", "Stratum", "golden", "tape_name", "write_session_tape"]

Stratum = Literal["failure", "edge", "success"]
_ORDER: Final[tuple[Stratum, ...]] = ("failure", "edge", "success")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")
EDGE_TAG: Final = "edge"


@dataclass(frozen=True, slots=True)
class GoldenTape:
    """One tape of the golden set."""

    path: Path
    session_id: str
    tag: str
    stratum: Stratum
    agent_name: str
    agent_version: str | None


def _slug(text: str) -> str:
    slug = _UNSAFE.sub("-", text).strip(".-")[:40].strip(".-")
    return slug or "x"


def tape_name(tag: str, session: SessionRow) -> str:
    """``{tag}--{agent}--{hash of the session id}.jsonl``, sanitised."""
    digest = hashlib.sha256(session.session_id.encode("utf-8")).hexdigest()[:16]
    return f"{_slug(tag)}--{_slug(session.agent_name or 'agent')}--{digest}.jsonl"


def _inside(root: Path, name: str) -> Path:
    path = (root / name).resolve()
    if path.parent != root:
        raise ConfigurationError(f"golden tape name {name!r} would leave {root}")
    return path


def write_session_tape(store: Store, session_id: str, path: str | os.PathLike[str]) -> Path:
    """Write one stored session as a tape at ``path`` (replaced whole); the path written."""
    lines = store.span_lines(session_id)
    if not lines:
        raise ConfigurationError(f"session {session_id!r} has no stored spans: nothing to write as a tape")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".golden-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write("".join(line + "\n" for line in lines).encode("utf-8"))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _strata(store: Store, sessions: list[SessionRow]) -> dict[str, Stratum]:
    """The stratum of each session, from its status, evaluations and tool calls."""
    ids = [s.session_id for s in sessions]
    failed_eval: set[str] = set()
    rough: set[str] = set()
    with store._backend.read() as tx:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ", ".join("?" * len(part))
            failed_eval.update(
                r[0]
                for r in tx.fetchall(
                    f"SELECT DISTINCT session_id FROM eval_record WHERE pass = ? AND session_id IN ({marks})",
                    [False, *part],
                )
            )
            rough.update(
                r[0]
                for r in tx.fetchall(
                    f"SELECT DISTINCT session_id FROM tool_call WHERE (status <> 'ok' OR error = ?) "
                    f"AND session_id IN ({marks})",
                    [OUT_OF_BOUNDS, *part],
                )
            )
            rough.update(
                r[0]
                for r in tx.fetchall(
                    f"SELECT DISTINCT r.session_id FROM (SELECT c.session_id, CASE WHEN c.call_key = LAG(c.call_key) "
                    f"OVER (PARTITION BY c.session_id ORDER BY c.seq) THEN 1 ELSE 0 END AS again FROM tool_call c "
                    f"WHERE c.session_id IN ({marks})) r WHERE r.again = 1",
                    list(part),
                )
            )
    out: dict[str, Stratum] = {}
    for s in sessions:
        if s.status == "failed" or s.session_id in failed_eval:
            out[s.session_id] = "failure"
        elif s.session_id in rough or EDGE_TAG in s.tags:
            out[s.session_id] = "edge"
        else:
            out[s.session_id] = "success"
    return out


def sample(store: Store, tag: str, per_tag: int) -> list[tuple[SessionRow, Stratum]]:
    """The sessions of one tag chosen for the golden set, with their strata."""
    sessions = [s for s in store.sessions(tag=tag) if s.status in ("success", "failed")]
    strata = _strata(store, sessions)
    pools: dict[Stratum, list[SessionRow]] = {k: [] for k in _ORDER}
    for s in sorted(sessions, key=lambda s: (-s.started_at, s.session_id)):
        pools[strata[s.session_id]].append(s)
    chosen: list[tuple[SessionRow, Stratum]] = []
    seen_inputs: set[str] = set()
    while len(chosen) < per_tag and any(pools.values()):
        for stratum in _ORDER:
            pool = pools[stratum]
            while pool:
                candidate = pool.pop(0)
                key = candidate.input_hash
                if key is not None and key in seen_inputs:
                    continue
                if key is not None:
                    seen_inputs.add(key)
                chosen.append((candidate, stratum))
                break
            if len(chosen) >= per_tag:
                break
    return chosen


def golden(
    store: Store, *, tag: str | Iterable[str], per_tag: int, out_dir: str | os.PathLike[str]
) -> list[GoldenTape]:
    """Sample up to ``per_tag`` sessions of each tag and write each as a tape in ``out_dir``.

    Returns the tapes written, per tag in the order chosen. A tag without finished sessions is
    a ``ConfigurationError`` naming the tags the store has.
    """
    tags = [tag] if isinstance(tag, str) else list(tag)
    if not tags:
        raise ConfigurationError("golden: give at least one tag")
    if isinstance(per_tag, bool) or not isinstance(per_tag, int) or per_tag < 1:
        raise ConfigurationError(f"golden: per_tag must be a whole number of 1 or more, not {per_tag!r}")
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    written: list[GoldenTape] = []
    for name in tags:
        chosen = sample(store, name, per_tag)
        if not chosen:
            with store._backend.read() as tx:
                known = [r[0] for r in tx.fetchall("SELECT DISTINCT tag FROM session_tag ORDER BY tag")]
            raise ConfigurationError(
                f"golden: no finished sessions tagged {name!r} in {store.location!r} (tags there: "
                f"{', '.join(known) or 'none'}); ingest with tags=… / otel-agent-replay ingest --tag"
            )
        for session, stratum in chosen:
            path = write_session_tape(store, session.session_id, _inside(root, tape_name(name, session)))
            written.append(
                GoldenTape(path, session.session_id, name, stratum, session.agent_name, session.agent_version)
            )
    return written
