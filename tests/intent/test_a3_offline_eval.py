"""003 A3 / issue 21 acceptance 2: the offline evaluation set runs, covers what the issue names,
and never falsely executes a dangerous action — rules only, and rules + the scripted fallback."""

from __future__ import annotations

from collections import Counter
from types import ModuleType

import pytest
from tests.bench.loader import load_bench


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("intent_eval.py")


def test_a3_the_set_has_200_labelled_utterances_of_every_kind_the_issue_names(bench: ModuleType) -> None:
    ev = bench.load()
    assert len(ev.lines) >= 200
    kinds = Counter(line["category"] for line in ev.lines)
    for kind in ("negation", "quoted", "multi_intent", "wrong_slots", "stale_confirmation",
                 "paraphrase"):
        assert kinds[kind] >= 10, kind
    assert {a for a, risk in ev.risks.items() if risk == "dangerous"}
    assert len({line["id"] for line in ev.lines}) == len(ev.lines)


@pytest.mark.parametrize("generative", [False, True], ids=["rules", "rules+generative"])
async def test_a3_no_dangerous_action_is_falsely_executed(bench: ModuleType, generative: bool) -> None:
    report = await bench.evaluate(bench.load(), generative=generative)
    assert report["dangerous_false_executions"] == 0, report["misses"]
    assert report["utterances"] >= 200
    if generative:
        assert report["model_calls_per_utterance"] > 0


async def test_a3_the_bench_counts_a_false_execution_when_one_happens(bench: ModuleType) -> None:
    ev = bench.load()
    # a recognizer that ignored negation would start "don't cancel order AB-123"
    line = {"id": "x", "category": "negation", "turns": ["cancel order AB-123"],
            "expect": {"decision": "no_match"}}
    outcome = await bench.run_line(ev, line, generative=False)
    assert outcome.false_execution and outcome.dangerous_false_execution and not outcome.exact
    stale = {"id": "y", "category": "stale_confirmation", "turns": ["cancel order AB-123"],
             "expect": {"decision": "matched", "intent": "cancel_order", "slots": {"order": "AB-123"}},
             "confirm": {"bound_to": 0}, "expect_confirm": "refused"}
    outcome = await bench.run_line(ev, stale, generative=False)
    assert outcome.dangerous_false_execution


def test_a3_the_bench_script_runs_and_checks(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--check"]) == 0
    out = capsys.readouterr().out
    assert "exact match" in out and "false executions (dangerous)" in out and "PASS" in out
