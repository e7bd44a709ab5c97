"""Issue #10, hardening: the SQLite database file and its -wal / -shm files are 0600, the
folders the store creates for it 0700 (issue #34, 8: the workspaces are not beside it, no one
else passes through); an existing file of ours is tightened and keeps working."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from agentloom.store import Insert, WriteSet, open_store

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="only root can open another user's file")


def mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o7777


def sidecars(db: Path) -> list[Path]:
    return [p for p in (Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]


def blob(key: str) -> WriteSet:
    return WriteSet((Insert("blobs", {"digest": key, "content": b"x", "size": 1,
                                      "created_at": 0.0}),))


def test_hardening_store_file_is_0600(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    db = tmp_path / "state" / "nested" / "agentloom.db"
    store = open_store(f"sqlite:///{db}")
    try:
        assert store.commit_many([blob("b1")]) == [None]
        assert mode(db) == 0o600
        assert sidecars(db), "WAL mode keeps a -wal and a -shm file while the store is open"
        for extra in sidecars(db):
            assert mode(extra) == 0o600, extra.name
    finally:
        store.close()
    assert mode(tmp_path / "state") == 0o700
    assert mode(tmp_path / "state" / "nested") == 0o700
    assert mode(tmp_path) == 0o755  # a folder the store did not create is left as it was


def test_hardening_an_existing_store_file_is_tightened_to_0600_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    db = tmp_path / "agentloom.db"
    store = open_store(f"sqlite:///{db}")
    assert store.commit_many([blob("kept")]) == [None]
    store.close()
    os.chmod(db, 0o644)  # e.g. made by an earlier version under the default umask
    leftover = Path(f"{db}-wal")
    leftover.write_bytes(b"")
    os.chmod(leftover, 0o644)

    store = open_store(f"sqlite:///{db}")
    try:
        assert mode(db) == 0o600
        for extra in sidecars(db):
            assert mode(extra) == 0o600, extra.name
        assert store.get("blobs", {"digest": "kept"}) is not None
        assert store.commit_many([blob("after")]) == [None]
        assert store.get("blobs", {"digest": "after"}) is not None
    finally:
        store.close()


@root_only
def test_hardening_a_store_file_owned_by_someone_else_keeps_its_mode(tmp_path: Path) -> None:
    db = tmp_path / "agentloom.db"
    sqlite3.connect(db).close()
    os.chown(db, 65534, 65534)
    os.chmod(db, 0o644)
    store = open_store(f"sqlite:///{db}")
    try:
        assert store.schema_version() > 0  # type: ignore[attr-defined]
        assert mode(db) == 0o644
    finally:
        store.close()


LOCKED_PROBE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
try:
    conn.execute("BEGIN IMMEDIATE")
except sqlite3.OperationalError as exc:
    print(exc)
else:
    print("took the write lock")
"""


def test_i35_preparing_an_open_database_keeps_this_process_s_locks(tmp_path: Path) -> None:
    """Opening a second store of a file this process already has open must not drop the first
    one's locks: closing *any* descriptor of a file releases every POSIX lock the process holds
    on it (SQLite, "How To Corrupt An SQLite Database File", 2.2), so the file modes are
    tightened by path. Found as a flaky "database disk image is malformed" in the workflow
    chaos bench; here the lock another process sees is checked directly."""
    import subprocess
    import sys

    from agentloom.store.sqlite import _prepare_file

    db = tmp_path / "agentloom.db"
    open_store(f"sqlite:///{db}").close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")  # the WAL write lock, held by this process
    try:
        _prepare_file(db)  # what a second SqliteStore of this file does first
        probe = subprocess.run([sys.executable, "-c", LOCKED_PROBE, str(db)],
                               capture_output=True, text=True, timeout=60, check=True)
        assert probe.stdout.strip() == "database is locked"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
