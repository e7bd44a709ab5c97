"""The recognizer: one message (and its conversation) → one ``Recognition``.

::

    text ─► pending intent? ─ "cancel that" ─────────────────► cancelled
              │
              ▼
           rules (RuleIndex) ─ hits ─► guards ─► one intent ─► validate_slots ─► matched / clarify
              │ none                             several ─────► clarify(candidates)
              ▼
           follow-up of the pending intent ("make it friday") ─► validate_slots (merged)
              │ none
              ▼
           Proposer (generative) ─► resolve to ONE spec ─► guards ─► validate_slots ─► thresholds
              │ none / failed / unresolved
              ▼
           no_match

Rules, follow-ups and proposals all pass the same ``validate_slots`` (003 F08); a proposal's
confidence must be a finite number in [0, 1] and is compared with ``Thresholds`` — a low one is
never promoted to matched. With a ``conversation``, a matched or clarify result becomes the
conversation's pending intent under a new revision (003 A1).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from .conversation import ConversationKey, ConversationStore, PendingIntent
from .followup import CANCEL_PHRASES, is_cancel, read_follow_up
from .ports import Proposer
from .recognition import Decision, Recognition, Source, Thresholds
from .registry import IntentRegistry
from .rules import Hit, RuleIndex, not_asked
from .slots import SlotProblem, validate_slots
from .spec import IntentSpec

__all__ = ["Recognizer"]

_NO_DATE = dt.date(1970, 1, 1)  # what validating a spec without date slots is handed


class Recognizer:
    """Recognises messages against ``registry``'s intents.

    ``proposer`` (default none: rules only) is the generative fallback; ``conversations``
    (default none: every message stands alone) keeps pending intents; ``today`` dates the
    relative date words (default ``date.today``); ``cancel_phrases`` are what cancels a pending
    intent.
    """

    def __init__(
        self,
        registry: IntentRegistry,
        *,
        proposer: Proposer | None = None,
        conversations: ConversationStore | None = None,
        thresholds: Thresholds = Thresholds(),  # noqa: B008 - frozen value
        today: Callable[[], dt.date] = dt.date.today,
        cancel_phrases: tuple[str, ...] = CANCEL_PHRASES,
    ) -> None:
        self._registry = registry
        self._proposer = proposer
        self._conversations = conversations
        self._thresholds = thresholds
        self._today = today
        self._cancel = cancel_phrases
        self._index_version = -1
        self._index = RuleIndex(())
        self._guards: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {}

    # -- public ---------------------------------------------------------------------------------

    async def recognize(self, text: str, *, conversation: ConversationKey | None = None) -> Recognition:
        """Recognise ``text``; with ``conversation``, as a turn of that conversation."""
        store = self._conversations if conversation is not None else None
        pending = await store.get(conversation) if store is not None and conversation else None
        if pending is not None and is_cancel(text, self._cancel):
            assert store is not None and conversation is not None
            await store.clear(conversation, revision=pending.revision)
            return Recognition(decision="cancelled", intent=pending.intent, action=pending.action,
                               slots=pending.slots, revision=pending.revision,
                               reason=f"cancelled the pending {pending.intent!r}")
        result = self.recognize_rules(text)
        if result.decision == "no_match" and pending is not None:
            result = self._follow_up(pending, text) or result
        # a rule that matched but was refused (negated, quoted, guarded) is an explicit
        # "not a request": the model is not asked to second-guess it
        if result.decision == "no_match" and result.source is None and self._proposer is not None:
            result = await self._generative(text, result.reason)
        # a reading of a negated, reported, conditional or questioning message — by the model or
        # as a follow-up — is never enough to start an action: ask (issue #34, 4)
        if result.decision == "matched" and (why := not_asked(text)) is not None:
            result = _with(result, decision="clarify", reason=f"{why}: say plainly what to do")
        if store is not None and conversation is not None and result.intent is not None \
                and result.decision in ("matched", "clarify"):
            saved = await store.save(conversation, PendingIntent(
                intent=result.intent, action=result.action or "", slots=result.slots,
                missing=result.missing, invalid=result.invalid),
                expected_revision=pending.revision if pending else None)
            result = _with(result, revision=saved.revision)
        return result

    def recognize_rules(self, text: str) -> Recognition:
        """The rule path alone: no proposer, no conversation (synchronous, for benchmarks)."""
        self._refresh()
        blocked: list[str] = []
        hits = self._index.hits(text, blocked)
        kept: list[Hit] = []
        for hit in hits:
            reason = self._guarded(hit.intent, text)
            if reason is None:
                kept.append(hit)
            else:
                blocked.append(reason)
        if not kept:
            return Recognition(decision="no_match", reason="; ".join(blocked) or None,
                               source="rule" if blocked else None)
        winner, others = _decide(kept)
        if others:
            names = tuple(sorted(h.intent for h in (winner, *others)))
            several = "several requests" if any(not h.overlaps(winner) for h in others) \
                else "ambiguous"
            return Recognition(decision="clarify", candidates=names, source="rule",
                               reason=f"{several}: {', '.join(names)}; one at a time")
        spec = self._registry.get(winner.intent)
        return self._validated(spec, winner.groups, 1.0, "rule")

    async def pending(self, conversation: ConversationKey) -> PendingIntent | None:
        """The conversation's pending intent, if any."""
        return None if self._conversations is None else await self._conversations.get(conversation)

    async def is_current(self, conversation: ConversationKey, *, action: str, revision: int) -> bool:
        """Whether a confirmation bound to ``(action, revision)`` is still for the pending
        intent (False once a follow-up, a new intent or a cancel moved the conversation on)."""
        current = await self.pending(conversation)
        return current is not None and current.binds(action=action, revision=revision)

    async def settle(self, conversation: ConversationKey, *, revision: int) -> bool:
        """Drop the pending intent once its action ran, if it is still at ``revision``."""
        if self._conversations is None:
            return False
        return await self._conversations.clear(conversation, revision=revision)

    # -- paths ----------------------------------------------------------------------------------

    def _validated(self, spec: IntentSpec, raw: Mapping[str, Any], confidence: float | None,
                   source: Source, *, carried: tuple[SlotProblem, ...] = ()) -> Recognition:
        report = validate_slots(spec, raw, today=self._today() if spec.dated else _NO_DATE)
        invalid = (*report.invalid, *(p for p in carried if p.slot not in raw))
        missing = tuple(m for m in report.missing if m not in {p.slot for p in invalid})
        sure = confidence is not None and confidence >= self._thresholds.match
        decision: Decision = "matched" if sure and not missing and not invalid else "clarify"
        reason = None
        if decision == "clarify":
            reason = _clarify_reason(spec, missing=missing, invalid=invalid, confidence=confidence,
                                     thresholds=self._thresholds)
        return Recognition(decision=decision, intent=spec.id, action=spec.action, slots=report.slots,
                           missing=missing, invalid=invalid, confidence=confidence, source=source,
                           reason=reason, confirm=spec.confirmation == "always")

    def _follow_up(self, pending: PendingIntent, text: str) -> Recognition | None:
        try:
            spec = self._registry.get(pending.intent)
        except KeyError:
            return None
        values = read_follow_up(spec, text, today=self._today())
        if not values:
            return None
        return self._validated(spec, {**pending.slots, **values}, 1.0, "rule",
                               carried=pending.invalid)

    async def _generative(self, text: str, rule_reason: str | None) -> Recognition:
        assert self._proposer is not None
        specs = self._registry.specs()
        try:
            proposal = await self._proposer.propose(text, specs)
        except Exception as exc:  # a failed model call is no recognition, never a crash
            return _no_match(f"generative fallback failed: {type(exc).__name__}: {exc}")
        if not isinstance(proposal, Mapping):
            return _no_match("generative fallback returned no object")
        name = proposal.get("intent")
        several = _candidates(self._registry, proposal.get("candidates"))
        if len(several) > 1:
            return Recognition(decision="clarify", candidates=several, source="generative",
                               confidence=_score(proposal),
                               reason=f"several requests: {', '.join(several)}; one at a time")
        if name is None or name == "" or name == "none":
            return _no_match(rule_reason or "no intent fits", confidence=_score(proposal))
        if not isinstance(name, str):
            return _no_match(f"generative fallback proposed a non-text intent {name!r}")
        found = self._registry.resolve(name)
        if not found:
            return _no_match(f"generative fallback proposed unknown intent {name!r}")
        confidence = _score(proposal)
        if len(found) > 1:
            return Recognition(decision="clarify", candidates=tuple(s.id for s in found),
                               source="generative", confidence=confidence,
                               reason=f"{name!r} is the action of several intents")
        spec = found[0]
        self._refresh()
        guard = self._guarded(spec.id, text)
        if guard is not None:
            return _no_match(guard, confidence=confidence)
        slots = proposal.get("slots", {})
        if slots is None:
            slots = {}
        if not isinstance(slots, Mapping):
            return _no_match("generative fallback proposed slots that are not an object")
        if confidence is None:
            result = self._validated(spec, slots, None, "generative")
            return _with(result, reason=f"the proposal's confidence {proposal.get('confidence')!r} is "
                                        "not a number in [0, 1]; " + (result.reason or ""))
        if confidence < self._thresholds.clarify:
            return _no_match(f"low confidence {confidence} for {spec.id!r} (below "
                             f"{self._thresholds.clarify})", confidence=confidence)
        return self._validated(spec, slots, confidence, "generative")

    # -- helpers --------------------------------------------------------------------------------

    def _refresh(self) -> None:
        if self._index_version != self._registry.version:
            specs = self._registry.specs()
            self._index = RuleIndex(specs)
            self._guards = {s.id: tuple((re.compile(g.forbid, re.IGNORECASE),
                                         g.reason or f"guard {g.forbid!r}") for g in s.guards)
                            for s in specs}
            self._index_version = self._registry.version

    def _guarded(self, intent: str, text: str) -> str | None:
        for pattern, reason in self._guards.get(intent, ()):
            if pattern.search(text):
                return f"{intent}: {reason}"
        return None


def _decide(hits: list[Hit]) -> tuple[Hit, list[Hit]]:
    """The winning hit and the hits it does not beat: a longer overlapping hit beats a
    shorter one, unless the shorter lies in a slot value the longer captured; hits that do
    not overlap are several requests."""
    ordered = sorted(hits, key=lambda h: -h.length)
    winner = ordered[0]
    rivals = [h for h in ordered[1:] if not h.overlaps(winner) or h.length == winner.length
              or h.inside_a_group_of(winner)]
    return winner, rivals


def _candidates(registry: IntentRegistry, names: Any) -> tuple[str, ...]:
    """The intents a proposal's ``candidates`` (several requests in one message) name."""
    if not isinstance(names, list | tuple):
        return ()
    found = {spec.id for name in names if isinstance(name, str) for spec in registry.resolve(name)}
    return tuple(sorted(found))


def _score(proposal: Mapping[str, Any]) -> float | None:
    value = proposal.get("confidence")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None
    return float(value)


def _no_match(reason: str, *, confidence: float | None = None) -> Recognition:
    return Recognition(decision="no_match", reason=reason, confidence=confidence,
                       source="generative")


def _with(result: Recognition, **changes: Any) -> Recognition:
    fields = {name: getattr(result, name) for name in result.__dataclass_fields__}
    return Recognition(**{**fields, **changes})


def _clarify_reason(spec: IntentSpec, *, missing: tuple[str, ...], invalid: tuple[SlotProblem, ...],
                    confidence: float | None, thresholds: Thresholds) -> str:
    parts = [f"{spec.slots[m].question or f'what {m}?'}" for m in missing]
    parts += [f"{p.slot}: {p.reason}" for p in invalid]
    if confidence is not None and confidence < thresholds.match:
        parts.append(f"confidence {confidence} is below {thresholds.match}: did you mean "
                     f"{spec.id!r}?")
    return "; ".join(parts) or f"confirm {spec.id!r}"
