"""Admission (003 F09): route one message as Start, Clarify or Agent.

::

    recognize(text) ─ matched, every slot valid, params valid ─► start  ─► CommandBus.submit
                    ├ matched with missing / invalid, or clarify ─► clarify (kept, asked about)
                    ├ cancelled (a pending action) ─► start, receipt ``rejected`` (declined)
                    └ no_match ─────────────────────────────────► agent (a normal agent run)

A slot fills the command param of the **same declared name** only, and the params are
checked against the command's schema before anything is submitted: an invalid slot never
starts a command, and a value the schema refuses is reported as an invalid slot (clarify).

Owns: that routing and the ``Admission`` value (``to_dict`` is the ``agentloom ask --json``
shape). Does not own: recognition (the ``Recognizing`` port — ``agentloom.intent.Recognizer``
fits it), running commands (``CommandBus``), starting an agent run (the caller).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agentloom.catalog import thaw_json
from agentloom.command.bus import CommandBus
from agentloom.command.receipts import Receipt
from agentloom.refs import Principal

__all__ = ["Admission", "Admitter", "Decision", "RecognitionLike", "Recognizing"]

Decision = Literal["start", "clarify", "agent"]
_PATH_SLOT = re.compile(r"^\$\.([A-Za-z_][A-Za-z0-9_]*)")


class SlotProblemLike(Protocol):
    @property
    def slot(self) -> str: ...
    @property
    def reason(self) -> str: ...


class RecognitionLike(Protocol):
    """What admission reads of a recognition (``agentloom.intent.Recognition``)."""

    @property
    def decision(self) -> str: ...
    @property
    def intent(self) -> str | None: ...
    @property
    def action(self) -> str | None: ...
    @property
    def slots(self) -> Mapping[str, Any]: ...
    @property
    def missing(self) -> Sequence[str]: ...
    @property
    def invalid(self) -> Sequence[SlotProblemLike]: ...


class Recognizing(Protocol):
    """The recognizer port (``agentloom.intent.Recognizer``)."""

    async def recognize(self, text: str, *, conversation: Any = None) -> RecognitionLike: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """One message's route. ``receipt`` is set for ``start`` only."""

    decision: Decision
    intent: str | None = None
    slots: Mapping[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    invalid: tuple[tuple[str, str], ...] = ()
    receipt: Receipt | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"decision", "intent", "slots", "missing", "invalid": [{"slot", "reason"}],
        "receipt": {"state", "operation_id", "result"} | null}`` (issue 21, pinned)."""
        receipt = None if self.receipt is None else {
            "state": self.receipt.state, "operation_id": self.receipt.operation_id,
            "result": thaw_json(self.receipt.result)}
        return {"decision": self.decision, "intent": self.intent,
                "slots": thaw_json(dict(self.slots)), "missing": list(self.missing),
                "invalid": [{"slot": s, "reason": r} for s, r in self.invalid],
                "receipt": receipt}


class Admitter:
    """Routes messages with ``recognizer`` and starts commands on ``bus``."""

    def __init__(self, recognizer: Recognizing, bus: CommandBus) -> None:
        self.recognizer = recognizer
        self.bus = bus

    async def admit(self, text: str, *, principal: Principal,
                    conversation: Any = None) -> Admission:
        """Route ``text`` for ``principal`` (``conversation``: the recognizer's conversation
        key, for multi-turn: a follow-up fills the pending intent's slots)."""
        found = await self.recognizer.recognize(text, conversation=conversation)
        slots = dict(found.slots)
        missing = tuple(found.missing)
        invalid = tuple((p.slot, p.reason) for p in found.invalid)
        decision = found.decision
        if decision == "no_match" or found.intent is None:
            return Admission(decision="agent", reason=getattr(found, "reason", None))
        if decision == "cancelled":
            return await self._cancelled(found, principal)
        if decision != "matched" or missing or invalid or found.action is None:
            return Admission(decision="clarify", intent=found.intent, slots=slots,
                             missing=missing, invalid=invalid,
                             reason=getattr(found, "reason", None))
        spec = self.bus.registry.peek(found.action)
        names = spec.param_names if spec is not None else ()
        params = {name: slots[name] for name in names if name in slots}
        if spec is not None:
            refused = _invalid_params(self.bus.registry.errors(spec.id, params))
            if refused:
                return Admission(decision="clarify", intent=found.intent, slots=slots,
                                 invalid=refused, reason="a slot value the command refuses")
        revision = getattr(found, "revision", None)
        binding = None if conversation is None or revision is None else {
            "intent": found.intent, "action": found.action, "revision": revision}
        receipt = await self.bus.submit(found.action, params, principal=principal,
                                        confirm=bool(getattr(found, "confirm", False)),
                                        binding=binding)
        if conversation is not None and revision is not None and receipt.state in (
                "committed", "rejected", "unknown"):
            settle = getattr(self.recognizer, "settle", None)
            if settle is not None:
                await settle(conversation, revision=revision)
        return Admission(decision="start", intent=found.intent, slots=slots, receipt=receipt)

    async def confirm(self, token: str, *, principal: Principal,
                      conversation: Any = None) -> Receipt:
        """Confirm the ``accepted`` command of ``token``. With ``conversation``, a token bound
        to a pending action that has changed since (another revision) is refused (A1)."""
        stored = self.bus.receipts.get(token.partition(".")[0])
        if stored is None or stored.principal != principal:
            return await self.bus.submit("", {}, principal=principal, confirmation=token)
        binding = stored.binding
        current = getattr(self.recognizer, "is_current", None)
        if (conversation is not None and binding is not None and current is not None
                and stored.state == "accepted"
                and not await current(conversation, action=binding["action"],
                                      revision=binding["revision"])):
            return await self.bus.submit(stored.command, stored.params, principal=principal,
                                         confirmation=token, binding={"stale": True})
        receipt = await self.bus.submit(stored.command, stored.params, principal=principal,
                                        confirmation=token, binding=binding)
        settle = getattr(self.recognizer, "settle", None)
        if conversation is not None and binding is not None and settle is not None \
                and receipt.state != "accepted":
            await settle(conversation, revision=binding["revision"])
        return receipt

    async def _cancelled(self, found: Any, principal: Principal) -> Admission:
        receipt = await self.bus.refuse(found.action or "", {}, principal=principal,
                                        code="COMMAND_CANCELLED",
                                        message="cancelled by the user; it never ran")
        return Admission(decision="start", intent=found.intent, receipt=receipt,
                         reason="the pending action was cancelled; nothing ran")


def _invalid_params(errors: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Schema errors (``"$.day: ..."``) as (slot, reason) pairs."""
    out = []
    for error in errors:
        path, _, message = error.partition(": ")
        match = _PATH_SLOT.match(path)
        out.append((match.group(1) if match else "", message or error))
    return tuple(out)
