"""Issue 18, acceptance 4 at CI size: ``bench/host.py --quick`` puts load on a real
``agentloom serve`` (clients creating and polling runs) and follows runs with many SSE
subscribers, on SQLite and on PostgreSQL. What is pinned is the JSON it prints, 0 errors, 0 lost
runs, every run ``succeeded`` and every subscriber receiving every event of its run once, in
order; timings are printed, never asserted. The full figures come from running the bench."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.bench.loader import load_bench
from tests.conftest import PG_BASE, require_pg

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "host.py"
host_bench = load_bench("host.py")

TIMEOUT_S = 600
EVENTS_PER_RUN = 12  # run.started, 3 model calls and 2 tool calls (2 each), run.finished


def _bench(backend: str) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", "--backends",
                           backend, "--store-base", PG_BASE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def _schema_exists(name: str) -> bool:
    with psycopg.connect(PG_BASE, connect_timeout=3) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                             (name,)).fetchone()
        return found is not None


def _assert_clean_load(load: dict[str, Any]) -> None:
    assert load["clients"] == 20 and load["seconds"] == 5.0
    assert load["errors"] == 0 and load["error_samples"] == [], load["error_samples"]
    assert load["lost_runs"] == 0 and load["not_ended"] == 0 and load["missing_from_list"] == 0
    assert load["runs_created"] >= load["clients"]
    assert load["statuses"] == {"succeeded": load["runs_created"]}
    assert load["listed"] == load["runs_created"]
    assert load["requests"] == load["latency"]["create"]["count"] + load["latency"]["get"]["count"]
    for key in ("wall_s", "requests_per_s", "runs_per_s", "server_cpu_s", "client_cpu_s"):
        assert isinstance(load[key], float) and load[key] > 0, key
    for kind in ("create", "get", "list"):
        spread = load["latency"][kind]
        assert spread["count"] >= 1, kind
        assert 0 < spread["p50_ms"] <= spread["p99_ms"] <= spread["max_ms"], kind
    assert load["serve_exit"] in host_bench.GRACEFUL
    assert load["problems"] == [] and load["ok"] is True


def _assert_every_event_once(sse: dict[str, Any]) -> None:
    assert sse["subscribers"] == 50 and sse["runs"] == 10
    assert sse["events_per_run"] == [EVENTS_PER_RUN]
    assert sse["events_expected"] == sse["events_received"] == 50 * EVENTS_PER_RUN
    for key in ("duplicates", "missing", "out_of_order", "differing", "subscriber_errors",
                "streams_not_ended", "operations_mismatch"):
        assert sse[key] == 0, key
    assert sse["lag"]["count"] == 50 * (EVENTS_PER_RUN - 1)  # all but run.started, live
    assert sse["problems"] == [] and sse["ok"] is True


def test_i18_host_bench_on_sqlite_loses_no_run_and_delivers_every_event_once() -> None:
    doc, stderr = _bench("sqlite")

    assert doc["ok"] is True, stderr
    assert doc["machine"]["cpus"] == os.cpu_count() and doc["steps_per_run"] == 3
    assert doc["config"]["backends"] == ["sqlite"] and doc["config"]["subscribers"] == 50
    [backend] = doc["backends"]
    assert backend["backend"] == "sqlite" and backend["ok"] is True
    _assert_clean_load(backend["load"])
    _assert_every_event_once(backend["sse"])
    assert "requests/s" in stderr and "PASS" in stderr


@pytest.mark.postgres
def test_i18_host_bench_on_postgres_loses_no_run_and_delivers_every_event_once() -> None:
    require_pg()
    doc, stderr = _bench("postgres")

    assert doc["ok"] is True, stderr
    [backend] = doc["backends"]
    assert backend["backend"] == "postgres" and backend["ok"] is True
    _assert_clean_load(backend["load"])
    _assert_every_event_once(backend["sse"])
    assert not _schema_exists(backend["schema"])


def _message(event_id: int, event: str = "tool.call.completed") -> dict[str, Any]:
    return {"id": str(event_id), "event": event, "data": {"type": event, "n": event_id}}


def test_i18_host_bench_counts_duplicated_missing_reordered_and_changed_events() -> None:
    """Negative control: the subscriber check is not vacuous."""
    stored = [_message(i) for i in (1, 2, 3, 4)]
    changed = {**_message(4), "data": {"type": "tool.call.completed", "n": 40}}
    received = [_message(1), _message(3), _message(2), _message(3), changed]

    found = host_bench.compare(received, stored)

    assert found == Counter(duplicates=1, missing=0, out_of_order=1, differing=1)
    assert host_bench.compare(stored[:3], stored)["missing"] == 1
    assert +host_bench.compare(stored, stored) == Counter()


def test_i18_host_bench_fails_a_load_with_errors_lost_or_failed_runs() -> None:
    """Negative control: an error, a run not ended, one missing from the list and one that
    failed each make the load phase fail, named."""
    tally = host_bench.Tally()
    tally.latencies["create"] += [0.01, 0.01, 0.01]
    tally.error("GET /v1/runs/x: 500 {}")
    tally.created.update({"a": "succeeded", "b": "running", "c": "failed"})

    load = host_bench.load_figures(tally, {"b": "running", "c": "failed"}, clients=1,
                                   seconds=1.0, wall=1.0, client_cpu=0.1)

    assert load["ok"] is False
    assert load["errors"] == 1 and load["lost_runs"] == 2
    assert load["not_ended"] == 1 and load["missing_from_list"] == 1
    assert any("request error" in p and "500" in p for p in load["problems"])
    assert any(p.startswith("2 lost run(s)") for p in load["problems"])
    assert any("did not succeed" in p for p in load["problems"])
