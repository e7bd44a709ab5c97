"""Issue 20, acceptance 5 at CI size: ``bench/workflows.py`` times a linear workflow of trivial
capability nodes on SQLite beside the same graph in LangGraph with ``SqliteSaver`` and measures
the state bytes per node transition at three graph sizes. What is pinned is the JSON it prints
(every figure, both sides) and that AgentLoom's bytes per node do not grow with the graph;
timings are printed, never asserted. The full figures come from running the bench itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from tests.bench.loader import load_bench

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "workflows.py"
TIMEOUT_S = 300

pytest.importorskip("langgraph.checkpoint.sqlite", reason="the bench extra (LangGraph) is not installed")


def _bench_module() -> ModuleType:
    """The bench as a module (its ``peers`` helpers import from bench/, as when it runs)."""
    return load_bench("workflows.py", bench_on_path=True)


def test_i20_5_workflows_bench_prints_both_sides_the_ratio_and_constant_bytes_per_node(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, str(BENCH), "--nodes", "4", "--runs", "2", "--warmup", "1",
         "--sizes", "2,3,5", "--bytes-runs", "1", "--memory", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)

    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["nodes"] == 4 and doc["runs"] == 2 and doc["store"] == "sqlite"
    assert set(doc["timing"]) == {"agentloom", "langgraph", "langgraph_sync", "agentloom_memory",
                                  "langgraph_memory"}
    for key, figures in doc["timing"].items():
        assert figures["runs"] == 2, key
        for name in ("median_ms", "p90_ms", "per_node_ms", "start_ms", "node_to_node_ms"):
            assert isinstance(figures[name], float) and figures[name] > 0, (key, name)
        assert figures["median_ms"] <= figures["p90_ms"], key
    assert doc["ratio"] > 0 and doc["ratio_verdict"] in ("PASS", "FAIL")
    assert doc["targets"] == {"ratio_at_most": 0.5, "bytes_spread_at_most": 0.1}
    assert doc["commits_per_node"] > 0
    # the bytes: every size measured on both sides, and AgentLoom's per node constant
    b = doc["bytes"]
    assert [r["nodes"] for r in b["agentloom"]] == [2, 3, 5] == [r["nodes"] for r in b["langgraph"]]
    assert b["verdict"] == "PASS", b
    assert len({round(r["state_data_b"], 6) for r in b["agentloom"]}) == 1
    for row in b["agentloom"][1:] + b["langgraph"][1:]:
        assert row["marginal_b_per_node"] > 0
    assert b["agentloom"][-1]["per_table_b"]["workflow_nodes"] > 0
    assert all(r["checkpoints_per_run"] >= r["nodes"] for r in b["langgraph"])
    # the readable table went to stderr, with the ratio and both verdicts
    assert "ratio AgentLoom / LangGraph (default durability)" in done.stderr
    assert "durability=async (default)" in done.stderr
    assert "state bytes per node transition" in done.stderr


def test_i20_5_bytes_check_is_not_vacuous_langgraph_checkpoints_grow_per_step(
        tmp_path: Path) -> None:
    """Negative control: the same measure over LangGraph's checkpoints, whose every step also
    carries what every node before it saw, finds bytes per step that grow with the graph — the
    spread check would fail it."""
    bench = _bench_module()
    rows = bench.with_marginals(
        [bench.langgraph_bytes(tmp_path, n, 1) for n in (4, 8, 16)])

    marginals = [r["marginal_b_per_node"] for r in rows[1:]]
    assert marginals[1] > marginals[0]
    assert bench.spread(marginals) > bench.TARGET_BYTES_SPREAD
