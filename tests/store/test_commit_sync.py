"""``WriteSet.sync``: a synced commit waits for the disk, an unsynced one (the record of what
has already happened) is complete and visible at once and reaches the disk with the next synced
commit. Counted with strace on SQLite (fdatasync calls of the writing process); on PostgreSQL
the transaction-local setting is checked to end with its transaction."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import Fence, Put, WriteSet, open_store

COMMITS = 12

CHILD = """
import sys
from agentloom.store import Put, WriteSet, open_store
url, plan = sys.argv[1], sys.argv[2]
store = open_store(url)
for i, mode in enumerate(plan):
    ws = WriteSet((Put("runs", {"run_id": f"r{i}", "status": "running", "lease_epoch": 0,
                                "created_at": 1.0, "updated_at": 1.0}),), sync=mode == "s")
    assert store.commit_many([ws]) == [None]
store.close()
"""


def run_row(i: int) -> Put:
    return Put("runs", {"run_id": f"r{i}", "status": "running", "lease_epoch": 0,
                        "created_at": 1.0, "updated_at": 1.0})


def disk_syncs(tmp_path: Path, name: str, plan: str) -> int:
    """fdatasync / fsync calls of a process that opens a new SQLite store and commits ``plan``
    (``s`` synced, ``u`` unsynced, one write set each)."""
    strace = shutil.which("strace")
    assert strace is not None
    out = subprocess.run(
        [strace, "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(tmp_path / f"{name}.txt"),
         sys.executable, "-c", CHILD, f"sqlite:///{tmp_path / name}.db", plan],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    calls = 0
    for line in (tmp_path / f"{name}.txt").read_text().splitlines():
        parts = line.split()
        if parts and parts[-1] in ("fsync", "fdatasync"):
            calls += int(parts[3])
    return calls


@pytest.mark.skipif(shutil.which("strace") is None,
                    reason="strace is not installed (.ci/run installs it): the disk syncs cannot be counted")
def test_s9_sqlite_unsynced_commits_do_not_wait_for_the_disk_and_the_next_synced_one_does(
    tmp_path: Path,
) -> None:
    base = disk_syncs(tmp_path, "none", "")
    synced = disk_syncs(tmp_path, "synced", "s" * COMMITS)
    unsynced = disk_syncs(tmp_path, "unsynced", "u" * COMMITS)
    then_synced = disk_syncs(tmp_path, "then", "u" * COMMITS + "s")
    assert synced - base >= COMMITS  # one WAL sync per commit at least
    assert unsynced == base  # not one more: the commits went to the WAL, not to the disk
    assert 1 <= then_synced - base < COMMITS  # one synced commit carries all of them there


@pytest.mark.parametrize("durable_store_url", ["sqlite", "postgres"], indirect=True)
def test_s9_an_unsynced_commit_is_complete_and_the_connection_syncs_again_after_it(
    durable_store_url: str,
) -> None:
    store = open_store(durable_store_url)
    other = open_store(durable_store_url)
    try:
        assert store.commit_many([WriteSet((run_row(1),), sync=False)]) == [None]
        assert other.get("runs", {"run_id": "r1"}) is not None  # committed: another reader sees it
        # a batch is synced when any of its write sets asks for it; both commit
        assert store.commit_many([WriteSet((run_row(2),), sync=False),
                                  WriteSet((run_row(3),))]) == [None, None]
        assert other.get("runs", {"run_id": "r3"}) is not None
        assert resting_sync(store) == ("2" if durable_store_url.startswith("sqlite") else "on")
    finally:
        store.close()
        other.close()


def test_s9_a_refused_unsynced_write_set_rolls_back_alone(store_url: str) -> None:
    store = open_store(store_url)
    try:
        assert store.commit_many([WriteSet((run_row(1),))]) == [None]
        stale = WriteSet((run_row(2),), Fence("r1", 7), sync=False)
        fine = WriteSet((run_row(3),), sync=False)
        outcomes = store.commit_many([stale, fine])
        assert outcomes[0] is not None and outcomes[1] is None
        assert store.get("runs", {"run_id": "r2"}) is None
        assert store.get("runs", {"run_id": "r3"}) is not None
    finally:
        store.close()


def resting_sync(store: Any) -> str:
    """The writer connection's setting between transactions."""
    cur = store._writer.cursor()
    try:
        if store.url.startswith("sqlite"):
            return str(cur.execute("PRAGMA synchronous").fetchone()[0])
        cur.execute("SHOW synchronous_commit")
        return str(cur.fetchone()[0])
    finally:
        cur.close()
