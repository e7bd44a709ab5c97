"""Issue 15, acceptance 6 at CI size: ``bench/mcp.py``'s side-by-side measurement runs the bare
``mcp.Client``, AgentLoom on a SQLite file and the durability floor against the tests' stdio lab
server, in alternating blocks. What is pinned is what the figures stand on: every side made its
calls, AgentLoom's run opened one server process for all of them, and the floor committed what it
claims (one row per call, its intent before the call and its result after). Timings are printed
by the bench, never asserted here; the figures come from running ``python bench/mcp.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.bench.loader import load_bench

CALLS = 20


async def test_issue15_6_side_by_side_every_side_calls_one_server_process_and_the_floor_commits_each_call(
    tmp_path: Path,
) -> None:
    bench = load_bench("mcp.py")

    report = await bench.side_by_side(CALLS, tmp_path)

    for side in ("bare", "agentloom", "floor"):
        assert report[side]["calls"] == CALLS and report[side]["median_us"] > 0
    # connection reuse: every AgentLoom call of the run went to one stdio server process
    assert report["processes"] == 1
    assert report["agentloom_calls"] == bench.WARMUP + CALLS // bench.BLOCK * (bench.BLOCK + 1)
    db = sqlite3.connect(tmp_path / "floor.db")
    try:
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()
        statuses = [s for (s,) in db.execute("SELECT status FROM calls")]
        (data,) = db.execute("SELECT data FROM calls ORDER BY call_id DESC LIMIT 1").fetchone()
    finally:
        db.close()
    # the floor's record: one row per call (warm-up and timed), each finished after its call
    assert mode == "wal"
    assert len(statuses) == report["agentloom_calls"] and set(statuses) == {"succeeded"}
    assert '"echo: hi ' in data
