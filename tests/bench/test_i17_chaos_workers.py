"""Issue 17, acceptance 1 at CI size: ``bench/chaos_workers.py`` runs two worker processes on
PostgreSQL, SIGKILLs (and restarts) them and SIGSTOPs one past its lease while runs with a
side-effecting ``exec`` and approvals are in flight. Pinned: no commit under a stale epoch,
never two live holders, no side effect executed twice, no lost or failed run, every run ended
or waiting. The full figures (4 workers, 200 runs, 100 kills, 50 pauses) come from running the
bench itself. The checkers are shown not to be vacuous on hand-made evidence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from tests.bench.loader import load_bench
from tests.conftest import PG_BASE, require_pg

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "chaos_workers.py"
bench = load_bench("chaos_workers.py")

BENCH_TIMEOUT_S = 90


def _schema_exists(name: str) -> bool:
    with psycopg.connect(PG_BASE, connect_timeout=3) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                             (name,)).fetchone()
        return found is not None


@pytest.mark.postgres
@pytest.mark.kill
def test_i17_chaos_workers_kills_and_pauses_break_no_invariant() -> None:
    require_pg()
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--workers", "2", "--runs", "12", "--kills", "3",
         "--pauses", "1", "--seed", "17", "--timeout", str(BENCH_TIMEOUT_S), "--json",
         "--store-base", PG_BASE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S + 30)

    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    assert report["violations"] == [], done.stderr
    assert done.returncode == 0, done.stderr
    assert report["finished"] is True and report["lost"] == 0
    assert set(report["statuses"]) <= {"succeeded", "cancelled", "waiting"}
    assert sum(report["statuses"].values()) == 12
    assert (report["kills"], report["pauses"]) == (3, 1)
    assert report["kills_mid_run"] == 3 and report["pauses_mid_run"] == 1
    assert report["restarts"] >= 3
    assert report["stale_commits"] == 0 and report["audited_writes"] > 0
    assert report["two_live_holders"] == 0 and report["claims"] >= 12
    assert report["effects_twice"] == 0 and report["executions"] > 0
    assert report["approved"] + report["rejected"] == 3  # runs 1, 5 and 9 asked
    assert not _schema_exists(report["schema"])


def _execution(label: str, nonce: str, *times: float) -> object:
    return bench.Execution(label, nonce, list(times))


def test_i17_chaos_workers_checker_counts_a_duplicate_and_an_overlap() -> None:
    """Negative control: an effect recorded twice (its result saved), two executions of one
    run at once, a succeeded call that never ran and a rejected one that ran are reported."""
    ops = [{"run_id": "r1", "event_type": "tool", "outcome": "succeeded",
            "data": {"request": {"argv": ["python3", "-c", bench.EFFECT]}}},
           {"run_id": "r2", "event_type": "tool", "outcome": "denied_before_execution",
            "data": {"request": {"argv": ["python3", "-c", bench.EFFECT]}}},
           {"run_id": "r3", "event_type": "tool", "outcome": "succeeded",
            "data": {"request": {"argv": ["python3", "-c", bench.SLOW]}}}]
    evidence = {"r1": [_execution(bench.EFFECT, "a", 1.0), _execution(bench.EFFECT, "b", 5.0),
                       _execution(bench.SLOW, "c", 1.5, 2.0), _execution(bench.SLOW, "d", 1.8)],
                "r2": [_execution(bench.EFFECT, "e", 1.0)]}

    counts, problems = bench.check_effects(ops, evidence)

    assert counts["effects_twice"] == 2 and counts["effects_twice_after_raw_saved"] == 1
    assert counts["overlapping_executions"] == 1
    assert counts["rejected_but_ran"] == 1 and counts["succeeded_without_effect"] == 1
    assert any("chaos-effect executed 2 times (operation succeeded)" in p for p in problems)


def test_i17_chaos_workers_checker_counts_a_second_holder_and_a_stale_commit() -> None:
    """Negative control: a claim while the old holder lived without a receipt, and a write by
    a process whose epoch was taken over, are reported; a claim after the old holder's kill
    or receipt is not."""
    def claim(run: str, epoch: int, app: str, at: float) -> dict[str, object]:
        return {"run_id": run, "old_epoch": epoch - 1, "epoch": epoch, "app": app, "at": at}

    run_log = [claim("r1", 1, "w0", 1.0), claim("r1", 2, "w1", 2.0),
               claim("r2", 1, "w0", 1.0), claim("r2", 2, "w1", 9.0),
               claim("r3", 1, "w2", 1.0), claim("r3", 2, "w1", 9.0)]
    receipts = [{"run_id": "r3", "lease_epoch": 1, "confirmed": 1, "created_at": 8.0}]

    held, problems = bench.check_holders(run_log, receipts, {"w0": 5.0, "w1": None, "w2": None})

    assert held == 1 and problems[0].startswith("run r1: w1 claimed epoch 2")
    writes = [{"tbl": "operations", "run_id": "r1", "operation_id": "o1", "phase": "delivered",
               "status": "succeeded", "epoch": 2, "app": "w0"},
              {"tbl": "operations", "run_id": "r1", "operation_id": "o1", "phase": "delivered",
               "status": "succeeded", "epoch": 2, "app": "w1"}]
    counts, problems = bench.check_writes(writes, run_log, {"w0", "w1", "w2"})
    assert counts["stale_commits"] == 1 and counts["delivered_twice"] == 1
    assert "written by w0 under epoch 2, held by w1" in problems[0]


def test_i34_2_chaos_workers_checker_takes_a_hand_back_by_the_holder_as_its_release() -> None:
    def row(run: str, old: int, epoch: int, app: str, at: float, old_status: str,
            status: str) -> dict[str, object]:
        return {"run_id": run, "old_epoch": old, "epoch": epoch, "app": app, "at": at,
                "old_status": old_status, "status": status}

    run_log = [row("r1", 0, 1, "w0", 1.0, "pending", "running"),
               row("r1", 1, 1, "w0", 2.0, "running", "pending"),  # w0 handed it back
               row("r1", 1, 2, "w1", 3.0, "pending", "running"),
               row("r2", 0, 1, "w0", 1.0, "pending", "running"),
               row("r2", 1, 1, "bench", 2.0, "running", "pending"),  # not its holder
               row("r2", 1, 2, "w1", 3.0, "pending", "running")]
    held, problems = bench.check_holders(run_log, [], {"w0": None, "w1": None})
    assert held == 1 and problems[0].startswith("run r2: w1 claimed epoch 2")


@pytest.mark.postgres
@pytest.mark.kill
def test_i34_2_chaos_workers_in_pid_namespaces_with_a_clock_an_hour_ahead() -> None:
    """Issue #34, acceptance 3 at CI size: each worker in its own PID namespace (the same
    hostname), worker 0's clock an hour ahead: no second live holder, no duplicate, no healthy
    run suspended; the runs a killed holder left suspended are resumed with --force."""
    require_pg()
    refused = bench.namespaces_refused()
    if refused:
        pytest.skip(refused)
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--workers", "2", "--runs", "12", "--kills", "3",
         "--pauses", "1", "--seed", "34", "--pid-namespaces", "--skew-s", "3600",
         "--timeout", str(BENCH_TIMEOUT_S), "--json", "--store-base", PG_BASE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=BENCH_TIMEOUT_S + 30)

    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    assert report["violations"] == [], done.stderr
    assert report["pid_namespaces"] is True and report["skew_s"] == 3600
    assert report["finished"] is True and report["lost"] == 0
    assert report["kills"] == 3 and report["claims"] >= 12
    assert report["two_live_holders"] == 0 and report["effects_twice"] == 0
    assert report["healthy_runs_suspended"] == 0 and report["stale_commits"] == 0


def test_i34_2_chaos_workers_checker_counts_a_suspension_before_the_lease_expired() -> None:
    log = [{"run_id": "r", "status": "suspended", "old_status": "running", "epoch": 1,
            "app": "w0", "at": 100.0, "lease_expires_at": 99.0, "reason": "skewed"},
           {"run_id": "s", "status": "suspended", "old_status": "running", "epoch": 1,
            "app": "w0", "at": 100.0, "lease_expires_at": 90.0, "reason": "gone quiet"}]
    count, problems = bench.check_suspensions(log)
    assert count == 1 and "run r " in problems[0]
