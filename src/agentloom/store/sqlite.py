"""The embedded SQLite store: WAL, ``synchronous=FULL`` (a power loss must not undo a commit).

The database file is ``0600`` and the folders the store creates for it ``0700``: the file
exists with that mode before SQLite opens it, and SQLite gives its ``-wal`` / ``-shm``
files the database file's mode.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

from agentloom.folders import make_dirs
from agentloom.store._sql import SqlStore

_KEY_CONFLICTS = frozenset({"SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"})
_SIDECARS = ("-wal", "-shm")


class SqliteStore(SqlStore):
    placeholder = "?"
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: str | Path, *, url: str | None = None) -> None:
        self.path = Path(path)
        _prepare_file(self.path)
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


def _prepare_file(path: Path) -> None:
    """Create the database file ``0600`` (its missing folders ``0711``: searchable, never
    listable, as the sandbox uid must pass through ``.agentloom/`` to the workspaces beside
    the database) before SQLite opens it.

    An existing file, and any ``-wal`` / ``-shm`` file left beside it, keeps working; if we
    own it and others may read it, it is tightened to the owner's read and write bits.
    """
    make_dirs(path.parent)
    _tighten(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    real = os.path.realpath(path)  # SQLite keeps its -wal / -shm beside the linked-to file
    for suffix in _SIDECARS:
        try:
            fd = os.open(real + suffix, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # none left over (or not a plain file): SQLite makes a new one
        _tighten(fd)


def _tighten(fd: int) -> None:
    """Drop every permission bit but the owner's read and write, if the file is ours; close ``fd``."""
    try:
        st = os.fstat(fd)
        loose = stat.S_IMODE(st.st_mode) & ~0o600
        if loose and st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode):
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o600)
    finally:
        os.close(fd)


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
