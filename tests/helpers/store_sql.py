"""Reading a store's database with the plain drivers, as another tool would."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg


def raw(location: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run SQL on the store's database with the plain driver, as another tool would."""
    if location.startswith("postgresql://"):
        with psycopg.connect(location, autocommit=True) as conn:
            cur = conn.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []
    conn = sqlite3.connect(location)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        rows = conn.execute(sql, params).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()
