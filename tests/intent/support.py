"""Intent sets and a scripted proposer for the intent tests."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from agentloom.config.intents import IntentConfig
from agentloom.intent import IntentRegistry, IntentSpec

TODAY = dt.date(2026, 12, 1)  # a Tuesday

MEETINGS = """
move_meeting:
  description: Move a meeting to another day
  examples: ["move the meeting to friday"]
  rules: [{pattern: "move (the )?meeting( to (?P<day>\\\\w+))?"}]
  slots: {day: {type: enum, values: [monday, tuesday, wednesday, thursday, friday], required: true}}
  expectations: [day]
  action: meeting.move
cancel_order:
  description: Cancel an order
  rules:
    - {pattern: "cancel (my |the )?order( (?P<order>[A-Z]{2}-\\\\d+))?"}
    - {keywords: [cancel, order]}
  slots: {order: {type: regex, pattern: "[A-Z]{2}-\\\\d+", required: true}}
  guards: [{forbid: "\\\\btest mode\\\\b", reason: never in test mode}]
  expectations: [order]
  action: orders.cancel
book_room:
  description: Book a room
  rules: [{pattern: "book (a )?room( for (?P<people>\\\\S+))?( on (?P<date>\\\\S+))?"}]
  slots:
    people: {type: int, minimum: 1, maximum: 20, required: true}
    date: {type: date}
    projector: {type: bool}
  expectations: [people, date]
  action: rooms.book
"""


def registry(text: str = MEETINGS) -> IntentRegistry:
    raw = yaml.safe_load(text)
    return IntentRegistry.from_config({k: IntentConfig.model_validate(v) for k, v in raw.items()})


class ScriptedProposer:
    """A ``Proposer`` replaying ``proposals`` in order, recording what it was asked."""

    def __init__(self, *proposals: Any) -> None:
        self.proposals = list(proposals)
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    async def propose(self, text: str, intents: Sequence[IntentSpec]) -> Mapping[str, Any]:
        self.asked.append((text, tuple(s.id for s in intents)))
        proposal = self.proposals.pop(0)
        if isinstance(proposal, BaseException):
            raise proposal
        return proposal  # type: ignore[no-any-return]
