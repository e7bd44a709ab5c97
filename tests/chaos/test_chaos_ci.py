"""Crash safety end to end (issue: agent runs): the CLI SIGKILLed at random moments and
resumed with ``agentloom runs resume`` until every run finishes — ``bench/chaos.py``, at CI size.

The full figures (≥ 300 kills on SQLite and on PostgreSQL) come from running the bench itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.bench.loader import load_bench
from tests.conftest import require_pg

chaos = load_bench("chaos.py")

pytestmark = pytest.mark.kill


def test_chaos_sigkill_cli_and_resume_sqlite_no_duplicate_no_lost_operation() -> None:
    report = chaos.chaos(kills=12, store="sqlite", seed=20261129)
    assert report["kills"] >= 12
    assert report["violations"] == []


@pytest.mark.postgres
def test_chaos_sigkill_cli_and_resume_postgres_no_duplicate_no_lost_operation() -> None:
    require_pg()
    report = chaos.chaos(kills=4, store="postgres", seed=7)
    assert report["kills"] >= 4
    assert report["violations"] == []


def test_chaos_checker_catches_a_duplicated_effect(tmp_path: Path) -> None:
    """Negative control: the invariant checker is not vacuous — an effect recorded twice for
    one operation, and an effect of no stored operation, are both reported."""
    from agentloom.store import open_store

    url = f"sqlite:///{tmp_path}/empty.db"
    open_store(url).close()
    counter = tmp_path / "counter.log"
    counter.write_text("op-a 1\nop-a 1\n")
    problems = chaos.check(url, counter, [])
    assert any("belong to no stored operation" in p for p in problems)
