"""The PostgreSQL backend, through psycopg 3: one connection, explicit transactions.

The store's SQL is written with ``?`` placeholders (the SQLite spelling); they become ``%s`` here.
Reads run in a ``REPEATABLE READ READ ONLY`` transaction so that a report sees one snapshot.
psycopg is an optional dependency: ``pip install 'otel-agent-replay[postgres]'``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from typing import Any

from otel_agent_replay.core import ConfigurationError, StoreError

from ._backend import Backend, Params, RowTuple, Tx, redact_url

__all__ = ["PostgresBackend"]


@lru_cache(maxsize=256)
def _pg_sql(sql: str) -> str:
    return sql.replace("?", "%s")


class _PgTx(Tx):
    __slots__ = ("_cur",)

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Params = ()) -> None:
        self._cur.execute(_pg_sql(sql), params)

    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        self._cur.executemany(_pg_sql(sql), rows)

    def fetchall(self, sql: str, params: Params = ()) -> list[RowTuple]:
        self._cur.execute(_pg_sql(sql), params)
        return list(self._cur.fetchall())


class PostgresBackend(Backend):
    """A store in a PostgreSQL database, given by a ``postgresql://`` URL."""

    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        self.location = redact_url(url)
        try:
            import psycopg
        except ImportError as err:
            raise ConfigurationError(
                f"the evidence store {self.location!r} is on PostgreSQL, which needs psycopg 3: "
                f"pip install 'otel-agent-replay[postgres]'"
            ) from err
        self._psycopg: Any = psycopg
        try:
            self._conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as err:
            raise StoreError(
                f"cannot connect to the evidence store {self.location!r}: {_first_line(err)}; check the URL, "
                f"that the server runs and accepts this user"
            ) from None
        self._lock = threading.RLock()

    @contextmanager
    def _transaction(self, read_only: bool) -> Iterator[Tx]:
        with self._lock:
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    if read_only:
                        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    yield _PgTx(cur)
            except self._psycopg.Error as err:
                raise StoreError(f"evidence store {self.location!r}: {_first_line(err)}") from err

    def write(self) -> AbstractContextManager[Tx]:
        return self._transaction(read_only=False)

    def read(self) -> AbstractContextManager[Tx]:
        return self._transaction(read_only=True)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
