"""``agentloom cleanup`` (000 §7.4, issue #14 item 12): retries every pending run-end cleanup
once, at once, whatever its back-off, and reports what it did; exit 1 while one stays pending."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.workspace.test_s7_4_cleanup_retry import (
    FailedCleanup,
    chattr,
    fail_a_cleanup,
    job,
    require_chattr,
)

from .support import Cli, agentloom, write_project


@pytest.fixture
def failed(tmp_path: Path, store_url: str) -> Iterator[FailedCleanup]:
    require_chattr(tmp_path)
    (tmp_path / "store").mkdir()
    made = fail_a_cleanup(store_url, tmp_path / "workspaces")
    yield made
    chattr("-i", made.pinned)


def test_s7_4_cleanup_command_retries_pending_cleanups_at_once_and_reports_them(
    failed: FailedCleanup, cli: Cli, store_url: str
) -> None:
    still = cli.json("cleanup", "--store", store_url, exit_code=1)  # the cause is still there
    assert still["pending"] == 1
    (tried,) = still["retried"]
    assert (tried["run_id"], tried["job_id"]) == (failed.run_id, failed.job_id)
    assert (tried["state"], tried["attempts"]) == ("pending", 2)  # its back-off was not waited
    assert "Operation not permitted" in tried["errors"][0] and tried["next_try"] is not None

    failed.unpin()
    done = cli("cleanup", "--store", store_url)
    assert done.exit_code == 0, done.stderr
    assert f"run {failed.run_id}: cleanup done (attempt 3)" in done.stdout
    assert not failed.run_folder.exists()
    assert job(store_url, failed.job_id)["state"] == "done"

    again = cli("cleanup", "--store", store_url)
    assert (again.exit_code, again.stdout.strip()) == (0, "no pending cleanup")
    assert cli.json("cleanup", "--store", store_url) == {"retried": [], "pending": 0}


def test_s7_4_cleanup_command_in_a_real_process_finds_the_store_of_its_config(
    tmp_path: Path,
) -> None:
    require_chattr(tmp_path)
    project = tmp_path / "proj"
    config = write_project(project, "  - text: unused\n", tools=("fs.read",))
    (project / ".agentloom").mkdir()
    failed = fail_a_cleanup(f"sqlite:///{project / '.agentloom' / 'agentloom.db'}",
                            tmp_path / "workspaces")
    try:
        failed.unpin()
        ran = agentloom("cleanup", "--config", str(config), "--json", cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout)["retried"][0]["state"] == "done"
        assert not failed.run_folder.exists()
    finally:
        chattr("-i", failed.pinned)


def test_s7_4_cleanup_command_names_a_missing_store(cli: Cli, tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path / 'nowhere.db'}"
    result = cli("cleanup", "--store", missing)
    assert result.exit_code == 2
    assert "STORE_NOT_FOUND" in result.stderr and "nowhere.db" in result.stderr
