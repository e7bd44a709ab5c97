"""SQLite durability: WAL with ``synchronous=FULL`` on every connection, and a commit that
has returned survives the writing process being killed right after it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import open_store

pytestmark = pytest.mark.parametrize("durable_store_url", ["sqlite"], indirect=True)

DEADLINE_S = 60.0


def connections(store: Any) -> dict[str, Any]:
    """The store's own connections (the writer and the reader)."""
    return {"writer": store._writer, "reader": store._reader}


def pragma(connection: Any, name: str) -> Any:
    cur = connection.cursor()
    try:
        return cur.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        cur.close()


def test_sqlite_store_connections_use_the_wal_journal(durable_store_url: str) -> None:
    store = open_store(durable_store_url)
    try:
        modes = {role: pragma(conn, "journal_mode") for role, conn in connections(store).items()}
        assert modes == {"writer": "wal", "reader": "wal"}
        assert store.pragma("journal_mode") == "wal"  # type: ignore[attr-defined]
    finally:
        store.close()


def test_sqlite_store_connections_sync_fully_unless_a_write_set_says_otherwise(
    durable_store_url: str,
) -> None:
    store = open_store(durable_store_url)
    try:
        levels = {role: pragma(conn, "synchronous") for role, conn in connections(store).items()}
        assert levels == {"writer": 2, "reader": 2}  # 2 = FULL; NORMAL (1) may lose commits
        assert store.pragma("synchronous") == 2  # type: ignore[attr-defined]
    finally:
        store.close()


CHILD_COMMITS_THEN_DIES = """
import os, signal, sqlite3, sys
from agentloom.store import Insert, WriteSet, open_store

url, path = sys.argv[1], sys.argv[2]
store = open_store(url)
outcomes = store.commit_many([WriteSet((Insert("runs", {
    "run_id": "run-committed", "status": "running", "lease_epoch": 0,
    "created_at": 1.0, "updated_at": 1.0, "data": {"survives": "☃"},
}),))])
print(outcomes, flush=True)
# A second writer leaves a transaction open: it must vanish with the process.
raw = sqlite3.connect(path, isolation_level=None)
raw.execute("BEGIN IMMEDIATE")
raw.execute("INSERT INTO runs (run_id, status, created_at, updated_at) "
            "VALUES ('run-uncommitted', 'running', 1, 1)")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_sqlite_commit_survives_sigkill_right_after_it_returned_and_open_transactions_do_not(
    durable_store_url: str,
) -> None:
    path = Path(durable_store_url[len("sqlite:///") :])
    child = subprocess.run(
        [sys.executable, "-c", CHILD_COMMITS_THEN_DIES, durable_store_url, str(path)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert child.stdout.strip() == "[None]"
    # Never closed, never checkpointed: the commit lives only in the write-ahead log.
    assert path.with_name(path.name + "-wal").stat().st_size > 0

    store = open_store(durable_store_url)
    try:
        run = store.get("runs", {"run_id": "run-committed"})
        assert run is not None
        assert run["data"] == {"survives": "☃"}
        assert store.get("runs", {"run_id": "run-uncommitted"}) is None
    finally:
        store.close()
