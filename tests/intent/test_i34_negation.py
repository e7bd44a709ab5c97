"""Issue #34 (4): a negated, reported, quoted or conditional request never starts a write.
The four messages the sweep found, on the rules and with a model that reads them as the
request (the scripted proposer answers as a model did); and acceptance 4: the adversarial set
(``tests/data/intent_eval_adversarial.jsonl``) has no false execution in either mode."""

from __future__ import annotations

from types import ModuleType

import pytest
from tests.bench.loader import load_bench

from agentloom.intent import Recognizer

from .support import TODAY, ScriptedProposer, registry

FOUND = [
    "please do NOT under any circumstances move the meeting to friday",
    "never, ever move the meeting to friday",
    "don't, please, move the meeting to friday",
    "I never said: move the meeting to friday",
]
MOVE = {"intent": "move_meeting", "slots": {"day": "friday"}, "confidence": 0.95}


@pytest.mark.parametrize("text", FOUND)
async def test_i34_4_the_negated_requests_the_sweep_found_start_nothing(text: str) -> None:
    result = await Recognizer(registry(), today=lambda: TODAY).recognize(text)
    assert result.decision != "matched", result
    guessed = await Recognizer(registry(), today=lambda: TODAY,
                               proposer=ScriptedProposer(MOVE)).recognize(text)
    assert guessed.decision != "matched", guessed


@pytest.mark.parametrize("text", ["if the client agrees, move the meeting to friday",
                                  "move the meeting to friday, just kidding",
                                  "should I move the meeting to friday?"])
async def test_i34_4_a_model_reading_a_conditional_or_retracted_message_only_asks(text: str) -> None:
    result = await Recognizer(registry(), today=lambda: TODAY,
                              proposer=ScriptedProposer(MOVE)).recognize(text)
    assert result.decision != "matched", result


async def test_i34_4_a_plain_request_still_starts() -> None:
    result = await Recognizer(registry(), today=lambda: TODAY).recognize("move the meeting to friday")
    assert (result.decision, result.slots) == ("matched", {"day": "friday"})


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("intent_eval.py")


@pytest.mark.parametrize("generative", [False, True], ids=["rules", "rules+generative"])
async def test_i34_4_the_adversarial_set_has_no_false_execution(bench: ModuleType, generative: bool) -> None:
    evaluation = bench.load(which="adversarial")
    assert len(evaluation.lines) >= 60
    report = await bench.evaluate(evaluation, generative=generative)
    assert report["false_executions"] == 0, report["misses"]
