"""Failed run-end cleanups are retried (000 §7.4, issue #14 item 12).

A cleanup that fails for real — a folder of the run made immutable (``chattr +i``), which even
root cannot empty — leaves a pending job with its back-off recorded on it; ``runs show`` says
the run's cleanup is pending; ``agentloom worker`` leaves the job alone until its back-off is
over and then, the cause removed, deletes the folders and marks the job done.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import Cli, write_project
from tests.workspace.test_deep_cleanup import WritesThenLocks

from agentloom.agent import AgentSpec, Runtime
from agentloom.store import Put, WriteSet, open_store
from agentloom.workspace.cleanup import BACKOFF_CAP_S, BACKOFF_FIRST_S, backoff_s

WAIT_S = 60.0


def chattr(flag: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True,
                          check=False, timeout=30)


def require_chattr(tmp_path: Path) -> None:
    """Skip unless a folder can be made immutable here (e2fsprogs, CAP_LINUX_IMMUTABLE and a
    file system that has the flag)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr (e2fsprogs) is not installed: no folder can be made undeletable")
    probe = tmp_path / "probe"
    probe.mkdir()
    tried = chattr("+i", probe)
    if tried.returncode != 0:
        pytest.skip(f"chattr +i does not work here: {tried.stderr.strip()}")
    chattr("-i", probe)
    probe.rmdir()


@dataclass
class FailedCleanup:
    """A run that ended with its cleanup pending: its folder ``pinned`` is immutable."""

    run_id: str
    job_id: str
    run_folder: Path
    pinned: Path

    def unpin(self) -> None:
        """Remove the cause of the failure."""
        assert chattr("-i", self.pinned).returncode == 0


def fail_a_cleanup(store_url: str, root: Path) -> FailedCleanup:
    """Run an agent that writes a file, then pin a folder of its work folder (immutable,
    with a file in it) before it answers: its run-end cleanup fails for real."""
    pinned: list[Path] = []

    def pin() -> None:
        scopes = rt.kernel.environment.scopes
        (row,) = scopes.store.query("workspace_scopes", {"state": "registered"})
        folder = scopes.path(scopes.get(row["workspace_scope_id"])) / "pinned"
        folder.mkdir()
        (folder / "stuck.txt").write_text("x")
        tried = chattr("+i", folder)
        assert tried.returncode == 0, tried.stderr
        pinned.append(folder)

    rt = Runtime([AgentSpec(name="main", model=WritesThenLocks(pin), tools=("fs.write",),
                            window=128_000)],
                 store=store_url, workspace_root=root)

    async def run() -> tuple[str, str]:
        try:
            result = await asyncio.wait_for(rt.run("write, then get pinned"), WAIT_S)
            assert (result.status, result.output) == ("succeeded", "done")
            (job,) = rt.store.query("cleanup_jobs", {"run_id": result.run_id})
            return result.run_id, job["job_id"]
        finally:
            await rt.aclose()

    run_id, job_id = asyncio.run(run())
    (folder,) = pinned
    return FailedCleanup(run_id, job_id, folder.parent.parent, folder)


@pytest.fixture
def failed(tmp_path: Path) -> Iterator[FailedCleanup]:
    require_chattr(tmp_path)
    store_url = f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}"
    (tmp_path / "store").mkdir()
    made = fail_a_cleanup(store_url, tmp_path / "workspaces")
    yield made
    chattr("-i", made.pinned)


def job(store_url: str, job_id: str) -> dict[str, Any]:
    store = open_store(store_url)
    try:
        row = store.get("cleanup_jobs", {"job_id": job_id})
        assert row is not None
        return row
    finally:
        store.close()


def backoff_over(store_url: str, job_id: str) -> None:
    """What time passing does to the job: its recorded next try is now in the past."""
    store = open_store(store_url)
    try:
        row = store.get("cleanup_jobs", {"job_id": job_id})
        assert row is not None
        store.commit_many([WriteSet((Put("cleanup_jobs", {
            "job_id": job_id, "data": {**row["data"], "next_try": 0.0}}),))])
    finally:
        store.close()


def test_s7_4_a_failed_cleanup_leaves_a_pending_job_with_its_back_off(
    failed: FailedCleanup, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}"
    row = job(url, failed.job_id)
    assert (row["state"], row["attempts"]) == ("pending", 1)
    data = row["data"]
    assert data["next_try"] == pytest.approx(row["updated_at"] + BACKOFF_FIRST_S)
    assert data["root"] == str((tmp_path / "workspaces").absolute())
    assert failed.run_folder.exists()


def test_s7_4_runs_show_says_the_runs_cleanup_is_pending(
    failed: FailedCleanup, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}"
    cli = Cli(url)
    shown = cli.json("runs", "show", failed.run_id, "--store", url)
    cleanup = shown["cleanup"]
    assert cleanup["pending"] is True and cleanup["state"] == "pending"
    assert cleanup["attempts"] == 1 and cleanup["job_id"] == failed.job_id
    assert "Operation not permitted" in cleanup["last_error"]
    assert str(tmp_path) not in cleanup["last_error"]  # no host path
    assert cleanup["next_try"] == job(url, failed.job_id)["data"]["next_try"]
    text = cli("runs", "show", failed.run_id, "--store", url)
    assert text.exit_code == 0, text.stderr
    assert "cleanup pending" in text.stdout and "Operation not permitted" in text.stdout


def test_s7_4_the_worker_retries_a_failed_cleanup_once_its_back_off_is_over(
    failed: FailedCleanup, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}"
    cli = Cli(url)
    config = write_project(tmp_path / "proj", "  - text: unused\n", tools=("fs.read",))
    failed.unpin()

    early = cli("worker", str(config), "--once", "--store", url, "--json")
    assert early.exit_code == 0, early.stderr
    row = job(url, failed.job_id)
    assert (row["state"], row["attempts"]) == ("pending", 1)  # its back-off is not over
    assert failed.run_folder.exists()

    backoff_over(url, failed.job_id)
    swept = cli("worker", str(config), "--once", "--store", url, "--json")
    assert swept.exit_code == 0, swept.stderr
    row = job(url, failed.job_id)
    assert (row["state"], row["attempts"]) == ("done", 2)
    assert not failed.run_folder.exists()
    shown = cli.json("runs", "show", failed.run_id, "--store", url)
    assert shown["cleanup"]["pending"] is False and shown["cleanup"]["state"] == "done"
    assert "cleanup pending" not in cli("runs", "show", failed.run_id, "--store", url).stdout


def test_s7_4_a_cleanup_that_fails_again_waits_twice_as_long(
    failed: FailedCleanup, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}"
    cli = Cli(url)
    config = write_project(tmp_path / "proj", "  - text: unused\n", tools=("fs.read",))
    backoff_over(url, failed.job_id)
    swept = cli("worker", str(config), "--once", "--store", url)
    assert swept.exit_code == 0, swept.stderr
    assert "failed again (attempt 2)" in caplog.text  # a warning on stderr, in a real process
    row = job(url, failed.job_id)
    assert (row["state"], row["attempts"]) == ("pending", 2)
    data = row["data"]
    assert data["next_try"] == pytest.approx(row["updated_at"] + 2 * BACKOFF_FIRST_S)
    assert failed.run_folder.exists()
    json.dumps(data)  # the job stays plain JSON


def test_s7_4_the_back_off_doubles_up_to_its_cap() -> None:
    assert [backoff_s(n) for n in (1, 2, 3, 4)] == [BACKOFF_FIRST_S * f for f in (1, 2, 4, 8)]
    assert backoff_s(40) == backoff_s(1000) == BACKOFF_CAP_S
