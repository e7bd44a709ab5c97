"""Issue 21 acceptance 3 (first half): the rule-throughput bench runs on its synthetic 100
intents and recognises what it claims to (its figure is printed, never asserted)."""

from __future__ import annotations

from tests.bench.loader import load_bench


def test_i21_3_rules_bench_runs_over_100_intents_with_every_kind_of_message() -> None:
    bench = load_bench("intent_rules.py")
    result = bench.run(100, 0.05)
    assert result["intents"] == 100
    # per group of six: one valid hit, one invalid slot, one negated, one quoted, two requests,
    # one unknown message
    groups = result["messages"] // 6
    assert result["decisions"] == {"matched": groups, "clarify": 2 * groups, "no_match": 3 * groups}
    assert result["recognize_per_s"] > 0
