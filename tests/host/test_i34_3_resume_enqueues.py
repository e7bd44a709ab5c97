"""Issue #34 (3): ``POST /v1/runs/{id}/resume`` hands the run to the queue like any start; the
API server never drives it itself. Eight runs of an agent capped at one
(``workers.max_concurrent_runs: {main: 1}``), queued through ``serve --no-execute`` and then
resumed over HTTP: they stay ``pending`` (before, the server took each at once, cap or not),
and a worker then runs them one at a time — judged from the store: no two runs' recorded work
overlaps."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.cli.support import write_project

from .support import RUN, WRITE, make_key, serving
from .test_i18_api import _api


def test_i34_3_eight_runs_resumed_over_http_of_an_agent_capped_at_one_run_one_at_a_time(
        tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    config = write_project(tmp_path / "p", WRITE, tools=["fs.write"],
                           extra="workers: {max_concurrent_runs: {main: 1}}\n")
    key = make_key(url, "alice", "acme")
    with serving(config, url, "--no-execute") as base:
        api = _api(base, key)
        ids = [api.post("/v1/runs", body={"task": f"write {i}"}).json()["run_id"] for i in range(8)]
        for run_id in ids:
            assert api.post(RUN + "/resume", run_id=run_id).status_code == 202
        statuses = [api.get(RUN, run_id=run_id).json()["status"] for run_id in ids]
        assert statuses == ["pending"] * 8  # queued, not driven by the API server
    done = subprocess.run([sys.executable, "-m", "agentloom", "worker", str(config), "--store", url,
                           "--once", "--concurrency", "8", "--json"], cwd=config.parent,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT run_id, status FROM runs").fetchall()
        assert sorted(status for run_id, status in rows if run_id in ids) == ["succeeded"] * 8
        spans = sorted(conn.execute(
            "SELECT MIN(created_at), MAX(updated_at) FROM operations WHERE run_id IN ({}) "
            "GROUP BY run_id".format(",".join("?" * len(ids))), ids).fetchall())
    assert len(spans) == 8
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, json.dumps(spans)  # one at a time
