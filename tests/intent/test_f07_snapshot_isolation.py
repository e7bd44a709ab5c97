"""003 F07: no caller can change a validated intent definition from outside — not through what
it registered, nor through anything it reads back."""

from __future__ import annotations

import dataclasses

import pytest

from agentloom.config.intents import IntentConfig
from agentloom.intent import (
    ConversationKey,
    InMemoryConversationStore,
    IntentRegistry,
    IntentSpec,
    Recognizer,
    RuleSpec,
    SlotSpec,
)

from .support import TODAY, ScriptedProposer, registry


def test_f07_mutating_what_was_registered_changes_nothing() -> None:
    slots = {"day": SlotSpec(name="day", type="enum", values=("monday", "friday"), required=True)}
    examples = ["move the meeting"]
    rules = [RuleSpec(pattern="move (the )?meeting( to (?P<day>\\w+))?")]
    spec = IntentSpec(id="move", action="meeting.move", slots=slots, examples=examples,  # type: ignore[arg-type]
                      rules=rules)  # type: ignore[arg-type]
    reg = IntentRegistry()
    reg.register(spec)
    slots["day"] = SlotSpec(name="day", type="string")
    slots["extra"] = SlotSpec(name="extra")
    examples.append("changed")
    rules.clear()
    kept = reg.get("move")
    assert list(kept.slots) == ["day"] and kept.slots["day"].type == "enum"
    assert kept.examples == ("move the meeting",)
    assert len(kept.rules) == 1


def test_f07_mutating_the_config_mapping_after_loading_changes_nothing() -> None:
    raw = {"action": "meeting.move", "slots": {"day": {"type": "enum", "values": ["monday"]}},
           "examples": ["x"]}
    reg = IntentRegistry.from_config({"move": IntentConfig.model_validate(raw)})
    raw["slots"]["day"]["values"].append("sunday")  # type: ignore[index]
    raw["action"] = "other"
    assert reg.get("move").slots["day"].values == ("monday",)
    assert reg.get("move").action == "meeting.move"


def test_f07_every_returned_object_refuses_mutation() -> None:
    reg = registry()
    spec = reg.get("move_meeting")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.action = "rm.rf"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.slots["day"] = SlotSpec(name="day")  # type: ignore[index]
    with pytest.raises(TypeError):
        del spec.slots["day"]  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.slots["day"].required = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.rules[0].pattern = ".*"  # type: ignore[misc]
    assert isinstance(spec.examples, tuple) and isinstance(spec.slots["day"].values, tuple)
    specs = reg.specs()
    assert isinstance(specs, tuple)
    assert reg.get("move_meeting").action == "meeting.move"


async def test_f07_recognitions_and_pending_intents_are_read_only_and_to_dict_is_a_copy() -> None:
    store = InMemoryConversationStore()
    rec = Recognizer(registry(), conversations=store, today=lambda: TODAY)
    key = ConversationKey("alice", "p", "c")
    result = await rec.recognize("move the meeting to friday", conversation=key)
    with pytest.raises(TypeError):
        result.slots["day"] = "monday"  # type: ignore[index]
    as_dict = result.to_dict()
    as_dict["slots"]["day"] = "monday"
    as_dict["missing"].append("x")
    assert result.slots == {"day": "friday"} and result.missing == ()
    pending = await rec.pending(key)
    assert pending is not None
    with pytest.raises(TypeError):
        pending.slots["day"] = "monday"  # type: ignore[index]
    assert (await rec.pending(key)) == pending


async def test_f07_mutating_a_proposal_after_recognition_changes_nothing() -> None:
    proposal = {"intent": "book_room", "slots": {"people": 4}, "confidence": 0.9}
    rec = Recognizer(registry(), proposer=ScriptedProposer(proposal), today=lambda: TODAY)
    result = await rec.recognize("we need space for four")
    proposal["slots"]["people"] = 99  # type: ignore[index]
    proposal["intent"] = "cancel_order"
    assert result.intent == "book_room" and result.slots == {"people": 4}
