"""003 F08: the generative fallback is resolved back to exactly one spec and validated by the
same slot validator as the rules; missing, invalid and unknown slots are reported, never
dropped; a low or broken confidence is never promoted to matched."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentloom.intent import (
    IntentRegistry,
    IntentSpec,
    Recognition,
    Recognizer,
    RuleSpec,
    SlotSpec,
    Thresholds,
)

from .support import TODAY, ScriptedProposer, registry


def _path_free(result: Recognition) -> dict[str, Any]:
    out = result.to_dict()
    for key in ("source", "confidence", "reason"):
        out.pop(key)
    return out


async def _generative(proposal: Any, reg: IntentRegistry | None = None, **kw: Any) -> Recognition:
    rec = Recognizer(reg or registry(), proposer=ScriptedProposer(proposal), today=lambda: TODAY,
                     **kw)
    return await rec.recognize("something no rule knows")


@pytest.mark.parametrize(("text", "slots"), [
    ("move the meeting to friday", {"day": "friday"}),
    ("move the meeting to Friday", {"day": "FRIDAY"}),
    ("move the meeting to saturday", {"day": "saturday"}),
    ("move the meeting", {}),
    ("book a room for 4 on tomorrow", {"people": "4", "date": "tomorrow"}),
    ("book a room for 40", {"people": 40}),
    ("book a room for four", {"people": "four"}),
    ("cancel order AB-12", {"order": "AB-12"}),
    ("cancel order ab-12", {"order": "ab-12"}),
])
async def test_f08_rule_and_generative_paths_give_equal_results_for_the_same_action_and_slots(
        text: str, slots: dict[str, Any]) -> None:
    rec = Recognizer(registry(), today=lambda: TODAY)
    by_rule = await rec.recognize(text)
    assert by_rule.source == "rule" and by_rule.intent is not None
    by_model = await _generative({"intent": by_rule.intent, "slots": slots, "confidence": 0.95})
    assert by_model.source == "generative"
    assert _path_free(by_model) == _path_free(by_rule)


async def test_f08_required_slot_missing_is_clarify_with_the_slot_named() -> None:
    result = await _generative({"intent": "book_room", "slots": {"date": "2026-12-04"},
                                "confidence": 0.99})
    assert result.decision == "clarify" and result.missing == ("people",)
    assert result.slots == {"date": "2026-12-04"}


async def test_f08_bad_enum_is_invalid_not_dropped() -> None:
    result = await _generative({"intent": "move_meeting", "slots": {"day": "someday"},
                                "confidence": 0.99})
    assert result.decision == "clarify"
    assert [(p.slot, p.value) for p in result.invalid] == [("day", "someday")]
    assert "not one of" in result.invalid[0].reason
    assert result.missing == ()  # reported once, as invalid


@pytest.mark.parametrize(("slots", "slot"), [
    ({"order": "12345"}, "order"),                 # regex format
    ({"people": 2, "date": "next week"}, "date"),   # date format
    ({"people": 2.5}, "people"),                    # not a whole number
    ({"people": 0}, "people"),                      # below minimum
    ({"people": True}, "people"),                   # a bool is no number
    ({"people": 3, "projector": "maybe"}, "projector"),
])
async def test_f08_bad_format_or_range_is_invalid(slots: dict[str, Any], slot: str) -> None:
    intent = "cancel_order" if "order" in slots else "book_room"
    result = await _generative({"intent": intent, "slots": slots, "confidence": 0.99})
    assert result.decision == "clarify"
    assert [p.slot for p in result.invalid] == [slot]


async def test_f08_non_finite_number_slot_is_invalid() -> None:
    reg = IntentRegistry()
    reg.register(IntentSpec(id="tip", action="pay.tip",
                            slots={"amount": SlotSpec(name="amount", type="number", required=True)}))
    for bad in (math.nan, math.inf, -math.inf):
        result = await _generative({"intent": "tip", "slots": {"amount": bad}, "confidence": 1.0}, reg)
        assert result.decision == "clarify" and [p.slot for p in result.invalid] == ["amount"]


async def test_f08_unknown_slot_is_reported_and_blocks_matched() -> None:
    result = await _generative({"intent": "move_meeting",
                                "slots": {"day": "friday", "room": "B2"}, "confidence": 0.99})
    assert result.decision == "clarify"
    assert result.slots == {"day": "friday"}
    assert [(p.slot, p.value) for p in result.invalid] == [("room", "B2")]
    assert "unknown slot" in result.invalid[0].reason


@pytest.mark.parametrize("confidence", [math.nan, math.inf, -0.1, 1.5, "0.9", True, None])
async def test_f08_a_broken_confidence_is_never_matched(confidence: Any) -> None:
    result = await _generative({"intent": "move_meeting", "slots": {"day": "friday"},
                                "confidence": confidence})
    assert result.decision == "clarify" and result.confidence is None
    assert "confidence" in (result.reason or "")


async def test_f08_low_confidence_is_never_promoted_and_thresholds_are_configurable() -> None:
    proposal = {"intent": "move_meeting", "slots": {"day": "friday"}, "confidence": 0.6}
    assert (await _generative(proposal)).decision == "clarify"
    assert (await _generative({**proposal, "confidence": 0.2})).decision == "no_match"
    lenient = Thresholds(match=0.5, clarify=0.1)
    assert (await _generative(proposal, thresholds=lenient)).decision == "matched"
    strict = Thresholds(match=1.0, clarify=0.9)
    assert (await _generative({**proposal, "confidence": 0.95}, thresholds=strict)).decision == "clarify"
    with pytest.raises(ValueError, match="clarify"):
        Thresholds(match=0.3, clarify=0.5)
    with pytest.raises(ValueError):
        Thresholds(match=math.nan)


def _clashing() -> IntentRegistry:
    """Two intents sharing one action (handler), each with its own slot table."""
    reg = IntentRegistry()
    reg.register(IntentSpec(id="refund_full", action="billing.refund",
                            slots={"order": SlotSpec(name="order", required=True)}))
    reg.register(IntentSpec(id="refund_partial", action="billing.refund",
                            slots={"order": SlotSpec(name="order", required=True),
                                   "amount": SlotSpec(name="amount", type="number", minimum=0.01,
                                                      required=True)}))
    return reg


async def test_f08_handler_name_clash_validates_against_the_proposed_spec_not_the_handler() -> None:
    result = await _generative({"intent": "refund_partial", "slots": {"order": "A1"},
                                "confidence": 0.99}, _clashing())
    assert result.intent == "refund_partial" and result.missing == ("amount",)
    result = await _generative({"intent": "refund_full", "slots": {"order": "A1", "amount": 5},
                                "confidence": 0.99}, _clashing())
    assert result.intent == "refund_full" and [p.slot for p in result.invalid] == ["amount"]
    # the shared action alone does not name one spec: ask, never pick one
    result = await _generative({"intent": "billing.refund", "slots": {"order": "A1"},
                                "confidence": 0.99}, _clashing())
    assert result.decision == "clarify" and result.candidates == ("refund_full", "refund_partial")


async def test_f08_action_alias_routes_to_the_declared_command() -> None:
    reg = IntentRegistry()
    reg.register(IntentSpec(id="reschedule", action="meeting.move", aliases=("move_meeting",),
                            rules=(RuleSpec(pattern="reschedule to (?P<day>\\w+)"),),
                            slots={"day": SlotSpec(name="day", required=True)}))
    for name in ("reschedule", "move_meeting", "meeting.move"):
        result = await _generative({"intent": name, "slots": {"day": "friday"}, "confidence": 0.9}, reg)
        assert (result.decision, result.intent, result.action) == ("matched", "reschedule",
                                                                   "meeting.move")
    by_rule = await Recognizer(reg).recognize("reschedule to friday")
    assert (by_rule.intent, by_rule.action) == ("reschedule", "meeting.move")


async def test_f08_an_unknown_or_absent_proposed_intent_is_no_match() -> None:
    assert (await _generative({"intent": "format_disk", "slots": {}, "confidence": 1.0})).decision \
        == "no_match"
    assert (await _generative({"intent": None, "confidence": 0.9})).decision == "no_match"
    assert (await _generative(["not", "a", "mapping"])).decision == "no_match"
    assert (await _generative({"intent": "move_meeting", "slots": ["friday"],
                               "confidence": 1.0})).decision == "no_match"


async def test_f08_a_failing_proposer_is_no_match_not_a_crash() -> None:
    result = await _generative(RuntimeError("model down"))
    assert result.decision == "no_match" and "model down" in (result.reason or "")


async def test_f08_guards_apply_to_the_generative_path_too() -> None:
    rec = Recognizer(registry(), proposer=ScriptedProposer(
        {"intent": "cancel_order", "slots": {"order": "AB-1"}, "confidence": 1.0}))
    result = await rec.recognize("in test mode, drop AB-1")
    assert result.decision == "no_match" and "test mode" in (result.reason or "")
    assert (await Recognizer(registry()).recognize("cancel order AB-1 in test mode")).decision \
        == "no_match"


async def test_f08_rules_first_the_model_is_not_asked_when_a_rule_hits() -> None:
    proposer = ScriptedProposer()
    rec = Recognizer(registry(), proposer=proposer)
    assert (await rec.recognize("move the meeting to monday")).decision == "matched"
    assert proposer.asked == []
