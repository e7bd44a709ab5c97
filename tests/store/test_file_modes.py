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
