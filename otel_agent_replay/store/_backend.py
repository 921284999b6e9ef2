"""What the store asks of a database: write transactions, snapshot reads, and one SQL spelling.

Every statement of the store is written once, with ``?`` placeholders and SQL that SQLite and
PostgreSQL both accept (``INSERT … ON CONFLICT … DO UPDATE``, window functions, ``CASE``); the
PostgreSQL backend turns ``?`` into ``%s``. Column types differ per database and are spelled in
``_schema``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, TypeVar

Dialect = Literal["sqlite", "postgresql"]
Params = Sequence[Any]
RowTuple = tuple[Any, ...]
T = TypeVar("T")

__all__ = ["Backend", "Dialect", "Params", "RowTuple", "Tx", "chunks", "redact_url"]


class Tx(ABC):
    """An open transaction: statements run in it, and all of them commit together or none does."""

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> None:
        """Run one statement."""

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement for each parameter row."""

    @abstractmethod
    def fetchall(self, sql: str, params: Params = ()) -> list[RowTuple]:
        """Run a query and return every row."""


class Backend(ABC):
    """One connection to one database. Not shared between processes; a lock guards it between threads."""

    dialect: Dialect
    location: str
    """Where the store is: a file path, or the URL without its password."""

    @abstractmethod
    def write(self) -> AbstractContextManager[Tx]:
        """A write transaction, taken before the first statement (writers queue here, never deadlock)."""

    @abstractmethod
    def read(self) -> AbstractContextManager[Tx]:
        """A read-only transaction: every query in it sees one snapshot."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection (idempotent)."""


_PASSWORD = re.compile(r"^(?P<head>[a-z][a-z0-9+.-]*://[^/@:]*):[^/@]*@", re.IGNORECASE)


def redact_url(url: str) -> str:
    """A database URL fit for a message: its password replaced by ``***``."""
    return _PASSWORD.sub(r"\g<head>:***@", url)


def chunks(rows: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Items in slices of ``size``."""
    for start in range(0, len(rows), size):
        yield rows[start : start + size]
