"""003 F09 / issue 21 acceptance 1: admission routes a message as start, clarify or agent; an
invalid slot never starts a command, and clarify keeps what was missing or invalid. Real
config, real recognizer (``agentloom.intent``), real pipeline and SQLite / PostgreSQL."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import PipelineCommandExecutor
from agentloom.command import Admitter, CommandBus, CommandRegistry
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.intent import (
    ConversationKey,
    InMemoryConversationStore,
    IntentRegistry,
    Recognizer,
)
from agentloom.kernel import Kernel

from .project import CONFIG, effects, write_project
from .support import ALICE


@contextlib.asynccontextmanager
async def admitter(folder: Path, store_url: str) -> AsyncIterator[tuple[Admitter, Kernel]]:
    config = load_config(write_project(folder))
    sys.path.insert(0, str(folder))
    sys.modules.pop("my_commands", None)
    kernel = Kernel(store_url)
    registry = CommandRegistry.from_config(config.commands)
    executor = PipelineCommandExecutor(kernel, registry)
    bus = CommandBus(registry, executor, StoreReceiptLog(kernel.store, kernel.coordinator))
    recognizer = Recognizer(IntentRegistry.from_config(config.intents),
                            conversations=InMemoryConversationStore())
    try:
        yield Admitter(recognizer, bus), kernel
    finally:
        await executor.close()
        kernel.close()
        sys.path.remove(str(folder))
        sys.modules.pop("my_commands", None)


async def test_f09_invalid_slots_never_start_a_command(tmp_path: Path,
                                                       durable_store_url: str) -> None:
    async with admitter(tmp_path / "p", durable_store_url) as (admit, kernel):
        routed = await admit.admit("move the meeting to sunday", principal=ALICE)
        assert routed.to_dict() == {
            "decision": "clarify", "intent": "move_meeting", "slots": {}, "missing": [],
            "invalid": [{"slot": "day", "reason": routed.invalid[0][1]}], "receipt": None}
        assert "sunday" in routed.invalid[0][1]
        assert effects(tmp_path / "p") == []
        assert kernel.store.query("command_receipts") == []  # nothing even reached the bus


async def test_f09_clarify_keeps_missing_and_invalid_and_a_follow_up_starts_it(
        tmp_path: Path, durable_store_url: str) -> None:
    key = ConversationKey(owner=ALICE.actor, project=ALICE.project, conversation="c1")
    async with admitter(tmp_path / "p", durable_store_url) as (admit, _):
        first = await admit.admit("move the meeting", principal=ALICE, conversation=key)
        assert (first.decision, first.missing, first.receipt) == ("clarify", ("day",), None)
        assert effects(tmp_path / "p") == []
        follow = await admit.admit("make it friday", principal=ALICE, conversation=key)
        assert follow.decision == "start" and follow.receipt is not None
        assert follow.receipt.state == "committed"
        assert follow.receipt.result == {"moved_to": "friday"}
        assert [e.split()[:2] for e in effects(tmp_path / "p")] == [["move", "friday"]]


async def test_f09_a_valid_match_starts_its_command_with_the_typed_slots(
        tmp_path: Path, durable_store_url: str) -> None:
    async with admitter(tmp_path / "p", durable_store_url) as (admit, _):
        routed = await admit.admit("move the meeting to friday", principal=ALICE)
        out = routed.to_dict()
        assert (out["decision"], out["intent"], out["slots"]) == ("start", "move_meeting",
                                                                  {"day": "friday"})
        assert out["receipt"]["state"] == "committed"
        assert out["receipt"]["result"] == {"moved_to": "friday"}
        assert effects(tmp_path / "p") == [f"move friday {out['receipt']['operation_id']}"]


async def test_f09_no_intent_is_an_agent_run_and_nothing_starts(tmp_path: Path,
                                                                durable_store_url: str) -> None:
    async with admitter(tmp_path / "p", durable_store_url) as (admit, _):
        routed = await admit.admit("what is the weather like", principal=ALICE)
        assert routed.to_dict() == {"decision": "agent", "intent": None, "slots": {},
                                    "missing": [], "invalid": [], "receipt": None}


async def test_f09_a_dangerous_action_is_only_accepted_until_confirmed_and_a_stale_token_is_refused(
        tmp_path: Path, durable_store_url: str) -> None:
    key = ConversationKey(owner=ALICE.actor, project=ALICE.project, conversation="c2")
    async with admitter(tmp_path / "p", durable_store_url) as (admit, _):
        routed = await admit.admit("wipe disk d1", principal=ALICE, conversation=key)
        assert routed.receipt is not None and routed.receipt.state == "accepted"
        token = routed.receipt.confirmation
        assert token is not None and effects(tmp_path / "p") == []
        # the conversation moved on (another intent is pending now): the token is stale
        await admit.admit("move the meeting", principal=ALICE, conversation=key)
        stale = await admit.confirm(token, principal=ALICE, conversation=key)
        assert stale.state == "rejected" and effects(tmp_path / "p") == []


async def test_f09_confirmed_in_the_same_conversation_runs_once(tmp_path: Path,
                                                               durable_store_url: str) -> None:
    key = ConversationKey(owner=ALICE.actor, project=ALICE.project, conversation="c3")
    async with admitter(tmp_path / "p", durable_store_url) as (admit, _):
        routed = await admit.admit("wipe disk d1", principal=ALICE, conversation=key)
        assert routed.receipt is not None and routed.receipt.confirmation is not None
        token = routed.receipt.confirmation
        done = await admit.confirm(token, principal=ALICE, conversation=key)
        again = await admit.confirm(token, principal=ALICE, conversation=key)
        assert (done.state, again.state) == ("committed", "committed")
        assert len(effects(tmp_path / "p")) == 1


CROSS_CHECKS = {
    "action_names_no_command": (
        (("action: meeting.move", "action: meeting.mvoe"),),
        "intents.move_meeting.action: no command named 'meeting.mvoe'; did you mean "
        "'meeting.move'?"),
    "slot_type_the_param_refuses": (
        (("properties: {day: {type: string}}", "properties: {day: {type: integer}}"),),
        "intents.move_meeting.slots.day: a enum slot cannot fill param 'day' of 'meeting.move', "
        "which is integer"),
    "slot_is_no_declared_param": (
        (("(?P<disk>", "(?P<drive>"), ("slots: {disk:", "slots: {drive:")),
        "intents.wipe_disk.slots.drive: command 'disk.wipe' declares no param 'drive'"),
    "required_param_no_slot_fills": (
        (("(?P<disk>", "(?P<drive>"), ("slots: {disk:", "slots: {drive:"),
         ("properties: {disk: {type: string}}", "properties: {disk: {type: string}, "
          "drive: {type: string}}")),
        "intents.wipe_disk.slots: command 'disk.wipe' requires param 'disk' and no slot"),
}


@pytest.mark.parametrize("case", sorted(CROSS_CHECKS))
def test_f09_config_cross_checks_slots_against_params_by_declared_name_and_type(
        tmp_path: Path, case: str) -> None:
    edits, expected = CROSS_CHECKS[case]
    text = CONFIG
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = write_project(tmp_path)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert expected in str(caught.value), str(caught.value)
