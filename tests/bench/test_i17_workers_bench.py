"""Issue 17, acceptance 2 at CI size: ``bench/workers.py`` drains queued runs with 1 and 2
worker processes on PostgreSQL and measures the claim latency of a few runs. What is pinned is
the JSON it prints (every figure, per case) and that every run ended ``succeeded``; timings are
printed, never asserted. The full figures come from running the bench itself."""

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
BENCH = ROOT / "bench" / "workers.py"
workers_bench = load_bench("workers.py")

pytestmark = pytest.mark.postgres
RUNS = 20
TIMEOUT_S = 600


def _schema_exists(name: str) -> bool:
    with psycopg.connect(PG_BASE, connect_timeout=3) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                             (name,)).fetchone()
        return found is not None


def test_i17_workers_bench_drains_every_run_and_prints_each_figure_as_json() -> None:
    require_pg()
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--runs", str(RUNS), "--workers", "1,2",
         "--latency-runs", "5", "--json", "--store-base", PG_BASE],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)

    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["ok"] is True, done.stderr
    assert doc["machine"]["cpus"] == os.cpu_count()
    assert isinstance(doc["machine"]["postgres"]["commit_ms"], float)
    assert doc["runs"] == RUNS and doc["steps_per_run"] == 5 and doc["concurrency"] == 4
    assert [case["workers"] for case in doc["cases"]] == [1, 2]
    for case in doc["cases"]:
        assert case["statuses"] == {"succeeded": RUNS}
        assert case["problems"] == []
        assert case["exit_codes"] == [0] * case["workers"]
        assert len(case["claimed"]) == case["workers"] and sum(case["claimed"]) == RUNS
        for key in ("seconds", "runs_per_s", "scaling", "submit_s", "submits_per_s",
                    "drain_s", "drain_runs_per_s", "worker_cpu_s"):
            assert isinstance(case[key], float) and case[key] > 0, key
        assert not _schema_exists(case["schema"])
    assert doc["cases"][0]["scaling"] == 1.0
    latency = doc["latency"]
    warmup = latency["warmup"]
    assert latency["runs"] == 5 and warmup >= 1
    assert latency["statuses"] == {"succeeded": 5 + warmup} and latency["problems"] == []
    assert latency["workers"] == 2 and latency["exit_codes"] == [0, 0]
    assert latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert latency["from_return"]["min_ms"] <= latency["from_return"]["p50_ms"]
    assert isinstance(latency["warmup_max_ms"], float)
    assert not _schema_exists(latency["schema"])
    assert "runs/s" in done.stderr and "claim latency" in done.stderr


FAILING_TURNS = """\
turns:
  - expect: {role: user, contains: "a task the bench never sends"}
    text: unreachable
"""


def test_i17_workers_bench_fails_when_a_run_does_not_succeed(tmp_path: Path) -> None:
    """Negative control: the bench's check is not vacuous — runs that end ``failed`` make the
    case fail, naming their statuses and the worker's exit code."""
    require_pg()
    config = workers_bench.write_config(tmp_path, FAILING_TURNS)

    case = workers_bench.throughput(config, PG_BASE, workers=1, runs=2, concurrency=2,
                                    timeout_s=TIMEOUT_S)

    assert case["ok"] is False
    assert case["statuses"] == {"failed": 2}
    assert any("run statuses {'failed': 2}, expected 2 succeeded" in p for p in case["problems"])
    assert any(p.startswith("worker 0 exited 1") for p in case["problems"])
    assert not _schema_exists(case["schema"])
