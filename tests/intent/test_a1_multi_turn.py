"""003 A1: a conversation keeps its pending intent, bound to (owner, project, conversation,
action, revision): a follow-up fills or changes a slot, "cancel that" cancels the pending action
only, and a confirmation bound to an older revision is stale."""

from __future__ import annotations

import pytest

from agentloom.errors import RevisionConflict
from agentloom.intent import ConversationKey, InMemoryConversationStore, PendingIntent, Recognizer

from .support import TODAY, registry

ALICE = ConversationKey("alice", "proj", "c1")


def _recognizer(store: InMemoryConversationStore | None = None) -> Recognizer:
    return Recognizer(registry(), conversations=store or InMemoryConversationStore(),
                      today=lambda: TODAY)


async def test_a1_make_it_friday_fills_the_missing_slot_of_the_pending_intent() -> None:
    rec = _recognizer()
    first = await rec.recognize("move the meeting", conversation=ALICE)
    assert (first.decision, first.missing, first.revision) == ("clarify", ("day",), 1)
    second = await rec.recognize("make it Friday", conversation=ALICE)
    assert (second.decision, second.intent, second.slots) == ("matched", "move_meeting",
                                                              {"day": "friday"})
    assert second.revision == 2 and second.action == "meeting.move"


async def test_a1_a_follow_up_changes_a_filled_slot_and_keeps_the_others() -> None:
    rec = _recognizer()
    await rec.recognize("book a room for 4 on friday", conversation=ALICE)
    changed = await rec.recognize("change it to monday", conversation=ALICE)
    assert changed.decision == "matched"
    assert changed.slots == {"people": 4, "date": "2026-12-07"}
    more = await rec.recognize("make it 6", conversation=ALICE)
    assert more.slots == {"people": 6, "date": "2026-12-07"}


async def test_a1_an_invalid_follow_up_is_kept_and_asked_about() -> None:
    rec = _recognizer()
    await rec.recognize("move the meeting to monday", conversation=ALICE)
    result = await rec.recognize("make it saturday", conversation=ALICE)
    assert result.decision == "clarify" and [p.slot for p in result.invalid] == ["day"]
    assert "day" not in result.slots  # never silently keep monday


async def test_a1_cancel_that_cancels_the_pending_action_only() -> None:
    store = InMemoryConversationStore()
    rec = _recognizer(store)
    other = ConversationKey("alice", "proj", "c2")
    await rec.recognize("move the meeting to monday", conversation=ALICE)
    await rec.recognize("cancel order AB-1", conversation=other)
    result = await rec.recognize("cancel that", conversation=ALICE)
    assert (result.decision, result.intent, result.action) == ("cancelled", "move_meeting",
                                                               "meeting.move")
    assert await rec.pending(ALICE) is None
    kept = await rec.pending(other)
    assert kept is not None and kept.intent == "cancel_order"
    # with nothing pending, "cancel that" is no command at all (certainly no cancel_order)
    again = await rec.recognize("cancel that", conversation=ALICE)
    assert again.decision == "no_match"


async def test_a1_a_stale_confirmation_is_refused_after_a_change() -> None:
    rec = _recognizer()
    asked = await rec.recognize("cancel order AB-1", conversation=ALICE)
    assert asked.decision == "matched" and asked.revision is not None
    assert await rec.is_current(ALICE, action="orders.cancel", revision=asked.revision)
    changed = await rec.recognize("make it CD-2", conversation=ALICE)
    assert changed.slots == {"order": "CD-2"}
    assert not await rec.is_current(ALICE, action="orders.cancel", revision=asked.revision)
    assert await rec.is_current(ALICE, action="orders.cancel", revision=changed.revision or 0)
    assert not await rec.is_current(ALICE, action="meeting.move", revision=changed.revision or 0)


async def test_a1_a_new_intent_replaces_the_pending_one_and_old_confirmations_go_stale() -> None:
    rec = _recognizer()
    old = await rec.recognize("cancel order AB-1", conversation=ALICE)
    new = await rec.recognize("move the meeting to friday", conversation=ALICE)
    assert new.intent == "move_meeting" and (new.revision or 0) > (old.revision or 0)
    assert not await rec.is_current(ALICE, action="orders.cancel", revision=old.revision or 0)


async def test_a1_revisions_never_repeat_after_cancel_or_settle() -> None:
    rec = _recognizer()
    first = await rec.recognize("cancel order AB-1", conversation=ALICE)
    await rec.recognize("never mind", conversation=ALICE)
    second = await rec.recognize("cancel order AB-1", conversation=ALICE)
    assert second.revision != first.revision
    assert not await rec.is_current(ALICE, action="orders.cancel", revision=first.revision or 0)
    assert not await rec.settle(ALICE, revision=first.revision or 0)
    assert await rec.settle(ALICE, revision=second.revision or 0)
    assert await rec.pending(ALICE) is None


async def test_a1_conversations_are_keyed_by_owner_and_project_too() -> None:
    rec = _recognizer()
    await rec.recognize("move the meeting", conversation=ALICE)
    for key in (ConversationKey("bob", "proj", "c1"), ConversationKey("alice", "other", "c1")):
        assert (await rec.recognize("make it friday", conversation=key)).decision == "no_match"
    assert (await rec.recognize("make it friday", conversation=ALICE)).decision == "matched"


async def test_a1_without_a_conversation_a_follow_up_means_nothing() -> None:
    rec = _recognizer()
    await rec.recognize("move the meeting")
    assert (await rec.recognize("make it friday")).decision == "no_match"


async def test_a1_the_store_refuses_a_save_based_on_a_stale_revision() -> None:
    store = InMemoryConversationStore()
    pending = PendingIntent(intent="move_meeting", action="meeting.move", slots={})
    saved = await store.save(ALICE, pending, expected_revision=None)
    await store.save(ALICE, pending, expected_revision=saved.revision)
    with pytest.raises(RevisionConflict):
        await store.save(ALICE, pending, expected_revision=saved.revision)


async def test_a1_a_negated_or_quoted_follow_up_changes_nothing() -> None:
    rec = _recognizer()
    first = await rec.recognize("move the meeting to monday", conversation=ALICE)
    for text in ("don't make it friday", 'she said "make it friday"', "not friday"):
        assert (await rec.recognize(text, conversation=ALICE)).decision == "no_match", text
    pending = await rec.pending(ALICE)
    assert pending is not None and pending.slots == {"day": "monday"}
    assert pending.revision == first.revision
