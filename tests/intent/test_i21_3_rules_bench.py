"""Issue 21 acceptance 3 (first half): the rule-throughput bench runs on its synthetic 100
intents and recognises what it claims to (its figure is printed, never asserted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "intent_rules.py"


def test_i21_3_rules_bench_runs_over_100_intents_with_every_kind_of_message() -> None:
    spec = importlib.util.spec_from_file_location("intent_rules_bench", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    result = bench.run(100, 0.05)
    assert result["intents"] == 100
    # per group of six: one valid hit, one invalid slot, one negated, one quoted, two requests,
    # one unknown message
    groups = result["messages"] // 6
    assert result["decisions"] == {"matched": groups, "clarify": 2 * groups, "no_match": 3 * groups}
    assert result["recognize_per_s"] > 0
