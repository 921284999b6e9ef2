"""The SQLite backend: one file, WAL journal, foreign keys on, writers queued by a busy timeout.

Several processes may write one file at once: each write transaction starts with
``BEGIN IMMEDIATE``, which takes the write lock up front, so two writers never both hold a read
snapshot and then deadlock over the upgrade; a writer that finds the lock taken waits up to
``BUSY_TIMEOUT_S``. ``synchronous=NORMAL`` is WAL's durable-enough setting: a crash or a killed
process never corrupts the file or leaves half a transaction; a power cut may lose the last
commits.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from otel_agent_replay.core import StoreError

from ._backend import Backend, Params, RowTuple, Tx

__all__ = ["BUSY_TIMEOUT_S", "SqliteBackend"]

BUSY_TIMEOUT_S: Final = 60.0
_OPEN_ATTEMPTS: Final = 20


class _SqliteTx(Tx):
    __slots__ = ("_conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> None:
        self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self._conn.executemany(sql, rows)

    def fetchall(self, sql: str, params: Params = ()) -> list[RowTuple]:
        return self._conn.execute(sql, params).fetchall()


class SqliteBackend(Backend):
    """A store in one SQLite file (created with its folder when missing)."""

    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.location = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as err:
            raise StoreError(
                f"cannot open the evidence store {self.location!r}: {err}; pass a path to a writable file "
                f"(its folder is created when missing) or a postgresql:// URL"
            ) from err
        self._lock = threading.RLock()
        self._setup()

    def _setup(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # Switching a new file to WAL needs a moment alone with it; processes opening it together retry.
        for attempt in range(_OPEN_ATTEMPTS):
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == _OPEN_ATTEMPTS - 1:
                    raise StoreError(f"cannot open the evidence store {self.location!r}: {err}") from err
                time.sleep(0.05 * (attempt + 1))
        if str(mode).lower() != "wal":
            raise StoreError(
                f"the evidence store {self.location!r} cannot use a WAL journal (SQLite answered {mode!r}): "
                f"several processes could not share it safely; put the file on a local file system"
            )
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise StoreError(f"evidence store {self.location!r}: cannot start a write: {err}") from err
            try:
                yield _SqliteTx(self._conn)
            except sqlite3.Error as err:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"evidence store {self.location!r}: {err}") from err
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as err:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"evidence store {self.location!r}: commit failed: {err}") from err

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with self._lock:
            self._conn.execute("BEGIN DEFERRED")
            try:
                yield _SqliteTx(self._conn)
            finally:
                self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
