"""The embedded SQLite store: WAL, ``synchronous=FULL`` (a power loss must not undo a commit)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from agentloom.store._sql import SqlStore

_KEY_CONFLICTS = frozenset({"SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"})


class SqliteStore(SqlStore):
    placeholder = "?"
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: str | Path, *, url: str | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(url or f"sqlite:///{self.path}")

    def _connect(self, *, reader: bool = False) -> Any:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=30000")
        return _AutocommitConnection(conn)

    def _begin(self, cur: Any) -> None:
        cur.execute("BEGIN IMMEDIATE")

    def _ddl(self, sqlite_sql: str, postgres_sql: str) -> str:
        return sqlite_sql

    def _is_key_conflict(self, exc: BaseException) -> bool:
        # IntegrityError also covers NOT NULL and CHECK: those are a bad row, not a lost race.
        return getattr(exc, "sqlite_errorname", None) in _KEY_CONFLICTS

    def pragma(self, name: str) -> Any:
        return self._read(f"PRAGMA {name}", ())[0][0]


class _AutocommitConnection:
    """sqlite3 in autocommit mode with explicit BEGIN: ``commit`` / ``rollback`` as SQL."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def cursor(self) -> sqlite3.Cursor:
        return self._conn.cursor()

    def commit(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    def rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()
