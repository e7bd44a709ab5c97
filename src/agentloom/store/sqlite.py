"""The embedded SQLite store: WAL, ``synchronous=FULL`` (a power loss must not undo a commit).

The database file is ``0600`` and the folders the store creates for it ``0700``: the file
exists with that mode before SQLite opens it, and SQLite gives its ``-wal`` / ``-shm``
files the database file's mode.

Read-only (``read_only=True``), the file is opened ``mode=ro`` and never created, tightened
or migrated. SQLite's WAL readers need the ``-wal`` / ``-shm`` files beside it: where they
are missing and the folder cannot be written (a shared, read-only store), no process can be
writing to the database, and it is read ``immutable=1`` instead.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentloom.errors import StoreError
from agentloom.folders import make_dirs
from agentloom.store._readonly import not_found
from agentloom.store._sql import SqlStore
from agentloom.store.ports import Claimed
from agentloom.store.queue import ClaimRequest

_KEY_CONFLICTS = frozenset({"SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"})
_SIDECARS = ("-wal", "-shm")
# A read-only WAL reader finds no -wal / -shm and cannot create them.
_NO_SIDE_FILES = frozenset({"SQLITE_READONLY_DIRECTORY", "SQLITE_CANTOPEN"})


class SqliteStore(SqlStore):
    """The embedded default ``Store``: one SQLite file in WAL mode, no server. One process
    writes at a time; for more than one worker use ``PostgresStore``."""

    dialect = "sqlite"
    placeholder = "?"
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: str | Path, *, url: str | None = None,
                 read_only: bool = False) -> None:
        self.path = Path(path)
        self._synced = True  # the writer connection's ``synchronous`` mode: FULL when true
        if not read_only:
            _prepare_file(self.path)
        elif not self.path.is_file():
            raise not_found(f"no store at {str(self.path.absolute())!r}: the file does not "
                            "exist (a read-only open never creates it)")
        super().__init__(url or f"sqlite:///{self.path}", read_only=read_only)

    def _connect(self, *, reader: bool = False) -> Any:
        if self.read_only:
            return _AutocommitConnection(_open_read_only(self.path))
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=30000")
        return _AutocommitConnection(conn)

    def _begin(self, cur: Any, *, sync: bool = True) -> None:
        # NORMAL, in WAL mode: the commit is written to the WAL, not fsynced. The writer keeps
        # the mode of its last transaction and is switched only when the next one differs.
        if sync != self._synced:
            cur.execute("PRAGMA synchronous=FULL" if sync else "PRAGMA synchronous=NORMAL")
            self._synced = sync
        cur.execute("BEGIN IMMEDIATE")

    def _claim(self, cur: Any, req: ClaimRequest) -> Claimed | None:
        """``BEGIN IMMEDIATE`` already serialises every writer: count, select, update."""
        cur.execute("SELECT count(*) FROM runs WHERE status = 'running' AND lease_owner = ?",
                    (req.worker_id,))
        if int(cur.fetchone()[0]) >= req.worker_cap:
            return None
        agents = _below_cap(cur, req)
        if not agents:
            return None
        marks = ", ".join("?" * len(agents))
        release = "" if req.release_id is None else " AND release_id = ?"
        cur.execute(f"SELECT run_id, agent, priority, created_at FROM runs WHERE status = "
                    f"'pending' AND agent IN ({marks}){release} ORDER BY priority DESC, "
                    "created_at, run_id LIMIT 1",
                    [*agents, *([] if req.release_id is None else [req.release_id])])
        row = cur.fetchone()
        if row is None:
            return None
        run_id, agent, priority, created_at = row
        cur.execute("UPDATE runs SET status = 'running', lease_epoch = lease_epoch + 1, "
                    "lease_owner = ?, lease_expires_at = ?, updated_at = ? WHERE run_id = ? "
                    "RETURNING lease_epoch", (req.worker_id, req.expires_at, req.now, run_id))
        return Claimed(run_id=run_id, lease_epoch=int(cur.fetchone()[0]), agent=agent,
                       priority=int(priority), created_at=float(created_at))

    def _is_key_conflict(self, exc: BaseException) -> bool:
        # IntegrityError also covers NOT NULL and CHECK: those are a bad row, not a lost race.
        return getattr(exc, "sqlite_errorname", None) in _KEY_CONFLICTS

    def _has_table(self, name: str) -> bool:
        sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self._read(sql, (name,))[0][0])

    def pragma(self, name: str) -> Any:
        return self._read(f"PRAGMA {name}", ())[0][0]


def _below_cap(cur: Any, req: ClaimRequest) -> list[str]:
    """The requested agents with room for one more running run (uncapped ones always)."""
    capped = sorted(req.agent_caps)
    if not capped:
        return list(req.agents)
    marks = ", ".join("?" * len(capped))
    cur.execute(f"SELECT agent, count(*) FROM runs WHERE status = 'running' AND agent IN "
                f"({marks}) GROUP BY agent", capped)
    running = {agent: int(n) for agent, n in cur.fetchall()}
    return [a for a in req.agents if a not in req.agent_caps
            or running.get(a, 0) < req.agent_caps[a]]


def _open_read_only(path: Path) -> sqlite3.Connection:
    """A connection that can only read ``path``: ``mode=ro``, else ``immutable=1``.

    ``mode=ro`` sees concurrent writers' commits, but a reader of a WAL database needs its
    ``-wal`` / ``-shm`` files and SQLite creates them when they are missing. In a folder this
    process cannot write that fails; then, if no ``-wal`` holds commits, nobody is writing
    (a writer would have made one) and the file alone is the database: it is read
    ``immutable=1``, without locks or side files. A ``-wal`` that holds commits is read only
    through ``-shm``: without one the store cannot be read here, and the error says so.
    """
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    conn = _read_only_connection(uri)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the WAL, if any
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorname", None) not in _NO_SIDE_FILES:
            raise
        wal = Path(os.path.realpath(path) + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(
                f"cannot read {str(path)!r} read-only: its write-ahead log {wal.name} holds "
                f"commits, which SQLite reads only through {path.name}-shm, and that file is "
                f"missing and cannot be created in {str(path.parent)!r}; open the store once "
                "with write access (any agentloom command that writes to it) to fold the log "
                "into the database file"
            ) from exc
    return _read_only_connection(uri + "&immutable=1")


def _read_only_connection(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                           timeout=30.0)
    conn.execute("PRAGMA query_only=1")
    return conn


def _prepare_file(path: Path) -> None:
    """Create the database file ``0600`` (its missing folders ``0700``: the workspaces are
    no longer beside it, ``folders.default_workspace_root``, so no one else passes through)
    before SQLite opens it.

    An existing file, and any ``-wal`` / ``-shm`` file left beside it, keeps working; if we
    own it and others may read it, it is tightened to the owner's read and write bits — by
    path, never through a descriptor of our own: closing any descriptor of a file drops every
    POSIX lock this process holds on it, and another store of this process may hold SQLite's
    locks on these very files (SQLite, "How To Corrupt", §2.2).
    """
    make_dirs(path.parent, 0o700)
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        return  # new: no one has it open, and it has no side files worth keeping
    except FileExistsError:
        pass
    real = os.path.realpath(path)  # SQLite keeps its -wal / -shm beside the linked-to file
    for name in (real, *(real + suffix for suffix in _SIDECARS)):
        _tighten(name)


def _tighten(name: str) -> None:
    """Drop every permission bit but the owner's read and write of ``name``, if it is a plain
    file of ours (nothing when it is missing)."""
    try:
        st = os.lstat(name)
    except OSError:
        return  # none left over: SQLite makes a new one
    loose = stat.S_IMODE(st.st_mode) & ~0o600
    if loose and st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode):
        os.chmod(name, stat.S_IMODE(st.st_mode) & 0o600)


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
