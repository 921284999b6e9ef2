"""``record(store=...)``: each run ingested into an evidence store, off the agent's thread.

A run's spans are kept in memory until its run span ends; then the run is handed to one worker
thread per recording, which writes it to a temporary tape with the tape exporter, loads it as the
loader reads any tape, and ingests it (idempotent). The run's end waits for that at most
``WAIT_S``, and only when no earlier run is still waiting for the store: with a free store a
session is in the store as soon as its run returns (an ingest takes a few milliseconds), while a
busy or locked store never holds the agent (SQLite's busy timeout alone is 60 s). At most
``MAX_QUEUED`` runs wait; a run beyond that is not queued and is reported. When the recording
closes, the worker is given ``flush_timeout`` seconds to finish; the runs it has not stored by
then are reported (they are still stored in the background if the store frees up while the
process lives), and each failure is reported, always with the ``otel-agent-replay ingest`` line
that loads them from the tape later (ingest is idempotent, so running it again is safe).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import tempfile
import threading
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from opentelemetry.exporter.agent_replay_tape import TapeSpanExporter
from opentelemetry.sdk.trace import ReadableSpan

from otel_agent_replay.core import RecordingWarning
from otel_agent_replay.core import attributes as A
from otel_agent_replay.store import Store, open_store, redact_url
from otel_agent_replay.tape import Tape, load_tape

WAIT_S: Final = 1.0
"""How long a run's end waits for its own ingest when no earlier run is waiting for the store."""
MAX_QUEUED: Final = 1024
"""Runs that may wait for the store at once; a run beyond that is reported, not stored."""

_logger = logging.getLogger(__name__)


@dataclass(eq=False)
class _Job:
    run_id: str
    spans: list[ReadableSpan]
    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    reported: bool = False


class StoreSink:
    """Ingests each run of a recording into an evidence store when its run span ends (see the module)."""

    def __init__(self, store: Store | str, tape: Path, flush_timeout: float = 5.0) -> None:
        self.store: Store | None = store if isinstance(store, Store) else None
        """The store; for one given by location, None until the worker has opened it."""
        self.owned = self.store is None
        self._given = store  # a location is opened by the worker: opening may wait for a lock too
        self.location = store.location if isinstance(store, Store) else redact_url(store)
        self._open_error: str | None = None
        self.tape = tape
        self.flush_timeout = flush_timeout
        self.ingested = 0
        """Runs ingested so far."""
        self.failures = 0
        """Runs whose ingest failed."""
        self.not_queued = 0
        """Runs not stored because ``MAX_QUEUED`` runs were already waiting for the store."""
        self._spans: dict[str, list[ReadableSpan]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._waiting = 0  # jobs queued or in flight
        self._jobs: list[_Job] = []  # jobs whose failure or fate is not reported yet
        self._skipped: list[str] = []
        self._worker: threading.Thread | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="otel-agent-replay-ingest-")

    def on_end(self, span: ReadableSpan) -> None:
        attrs = span.attributes or {}
        run_id = attrs.get(A.RUN_ID)
        if not isinstance(run_id, str):
            return  # a user's own span inside a tool: on the tape, not a row of the store
        with self._lock:
            if self._closed:
                return  # a run that outlived its recording: the tape's exporter has closed too
            self._spans.setdefault(run_id, []).append(span)
            if attrs.get(A.GEN_AI_OPERATION_NAME) != A.OP_INVOKE_AGENT:
                return
            job = self._submit(run_id, self._spans.pop(run_id))
            alone = job is not None and self._waiting == 1
        if job is not None and alone and job.done.wait(WAIT_S):
            self._report_now(job)

    def _submit(self, run_id: str, spans: list[ReadableSpan]) -> _Job | None:
        """Queue a run for the worker (under ``_lock``); None when too many runs already wait."""
        if self._waiting >= MAX_QUEUED:
            self.not_queued += 1
            self._skipped.append(run_id)
            if self.not_queued == 1:
                _logger.warning(
                    "agent-replay: %d runs already wait for the evidence store %s; run %s and later ones are not "
                    "stored (the tape %s has them)",
                    MAX_QUEUED,
                    self.location,
                    run_id,
                    self.tape,
                )
            return None
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="otel-agent-replay-store", daemon=True)
            self._worker.start()
        job = _Job(run_id, spans)
        self._waiting += 1
        self._jobs.append(job)
        self._queue.put(job)
        return job

    def _report_now(self, job: _Job) -> None:
        """In the agent's thread, right after its run: warn about a failed ingest (once)."""
        with self._lock:
            if job.reported:
                return
            job.reported = True
            if job in self._jobs:
                self._jobs.remove(job)
        if job.error is not None:
            warnings.warn(
                f"run {job.run_id} could not be ingested into the evidence store {self.location!r}: "
                f"{job.error}. The tape {self.tape} has it; ingest it later with: {self._command()}",
                RecordingWarning,
                stacklevel=4,
            )

    def _command(self) -> str:
        return f"otel-agent-replay ingest {self.tape} --db {self.location}"

    def _work(self) -> None:
        try:
            if self.store is None and isinstance(self._given, str):
                try:
                    self.store = open_store(self._given)
                except Exception as exc:
                    self._open_error = f"{type(exc).__name__}: {str(exc).rstrip('.')}"
            while True:
                job = self._queue.get()
                if job is None:
                    return
                try:
                    self._ingest(job)
                finally:
                    with self._lock:
                        self._waiting -= 1
                        if job.error is None and not job.reported:
                            job.reported = True
                            if job in self._jobs:
                                self._jobs.remove(job)
                    job.done.set()
        finally:
            self._tmp.cleanup()
            if self.owned and self.store is not None:
                with contextlib.suppress(Exception):  # closing a broken store must not fail anything
                    self.store.close()

    def _ingest(self, job: _Job) -> None:
        if self.store is None:
            self.failures += 1
            job.error = f"the store could not be opened ({self._open_error})"
            return
        path = Path(self._tmp.name) / f"{uuid.uuid4().hex}.jsonl"
        try:
            exporter = TapeSpanExporter(path)
            exporter.export(job.spans)
            exporter.shutdown()
            loaded = load_tape(path)
            self.store.ingest(Tape(str(self.tape), loaded.runs, loaded.warnings))
            self.ingested += 1
        except Exception as exc:
            self.failures += 1
            job.error = f"{type(exc).__name__}: {str(exc).rstrip('.')}"
        finally:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Queue what is left, give the worker ``flush_timeout`` seconds, report what is not stored."""
        with self._lock:
            self._closed = True
            for run_id, spans in self._spans.items():  # runs still open, steps that ended after their run
                self._submit(run_id, spans)
            self._spans.clear()
            worker = self._worker
        if worker is None:
            self._tmp.cleanup()  # no run ended: a store given by location was never opened
        else:
            self._queue.put(None)  # the worker stops after the runs queued before this
            deadline = time.monotonic() + self.flush_timeout
            for job in list(self._jobs):
                job.done.wait(max(0.0, deadline - time.monotonic()))
        self._report_at_close()

    def _report_at_close(self) -> None:
        with self._lock:
            jobs, self._jobs = self._jobs, []
            skipped, self._skipped = self._skipped, []
            for job in jobs:
                job.reported = True
        failed = [j for j in jobs if j.done.is_set() and j.error is not None]
        late = [j.run_id for j in jobs if not j.done.is_set()]
        where = f"the evidence store {self.location!r}"
        if self._open_error is not None and failed:
            ids = _ids([j.run_id for j in failed])
            warnings.warn(
                f"record({str(self.tape)!r}, store={self.location!r}): the evidence store could not be opened "
                f"({self._open_error}); {len(failed)} run(s) went to the tape only ({ids}). "
                f"Ingest it later with: {self._command()}",
                RecordingWarning,
                stacklevel=4,
            )
            failed = []
        for job in failed:
            warnings.warn(
                f"run {job.run_id} could not be ingested into {where}: {job.error}. The tape {self.tape} has it; "
                f"ingest it later with: {self._command()}",
                RecordingWarning,
                stacklevel=4,
            )
        if late:
            warnings.warn(
                f"{len(late)} run(s) were not yet stored in {where} when the recording ended "
                f"({self.flush_timeout:g}s after; the store is busy or locked): {_ids(late)}. They are still being "
                f"stored in the background while the process lives; the tape {self.tape} has them, and ingesting "
                f"it again is safe (idempotent): {self._command()}",
                RecordingWarning,
                stacklevel=4,
            )
        if skipped:
            warnings.warn(
                f"{len(skipped)} run(s) were not stored in {where}: {MAX_QUEUED} runs were already waiting for it "
                f"({_ids(skipped)}). The tape {self.tape} has them; ingest it later with: {self._command()}",
                RecordingWarning,
                stacklevel=4,
            )


def _ids(run_ids: list[str], shown: int = 10) -> str:
    more = f" and {len(run_ids) - shown} more" if len(run_ids) > shown else ""
    return ", ".join(run_ids[:shown]) + more
