"""Follow-ups (003 A1): reading "make it Friday" as a new value for a pending intent's slot,
and "cancel that" as cancelling it.

Only the pending intent's *expectations* may be filled; a message with a negation ("don't make
it friday") fills nothing, and quoted text is left out. Each is read by its own pattern, else by
a change phrase ("make it X", "change it to X", "X instead"), else by its type (an enum value,
a date word, a number appearing in the message). What is read is raw: the recognizer passes it
through the one slot validator, so "make it saturday" for a weekday enum is reported invalid,
not dropped.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from .rules import NEGATIONS, quoted_spans
from .slots import WEEKDAYS, parse_date, validate_slots
from .spec import IntentSpec, SlotSpec

__all__ = ["CANCEL_PHRASES", "is_cancel", "read_follow_up"]

CANCEL_PHRASES = ("cancel that", "cancel it", "never mind", "nevermind", "forget it",
                  "forget that", "scratch that", "stop that", "abort that", "don't do it",
                  "do not do it")
_PUNCT = re.compile(r"[^\w\s']+")
_CHANGE = re.compile(
    r"^(?:(?:no|actually|ok|okay|oh|sorry|wait)[,\s]+)*(?:please\s+)?"
    r"(?:make (?:it|that)|change (?:it|that)(?: to)?|set (?:it|that) to|move (?:it|that) to|"
    r"switch (?:it|that) to|use|put (?:it|that) (?:on|at|to))\s+(?P<value>.+?)(?:\s+instead)?"
    r"(?:\s+please)?$", re.IGNORECASE)
_INSTEAD = re.compile(r"^(?:(?:no|actually)[,\s]+)*(?P<value>.+?)\s+instead$", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?![\w.])")
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_MAX_WORDS = 8


def _plain(text: str) -> str:
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def is_cancel(text: str, phrases: tuple[str, ...] = CANCEL_PHRASES) -> bool:
    """Whether ``text`` says to cancel the pending action (and nothing else)."""
    plain = _plain(text)
    plain = re.sub(r"^(?:(?:no|actually|ok|okay|please|oh)\s+)+", "", plain)
    plain = re.sub(r"\s+please$", "", plain)
    return plain in phrases


def read_follow_up(spec: IntentSpec, text: str, *, today: dt.date) -> dict[str, Any]:
    """Raw values ``text`` gives for ``spec``'s expectation slots (empty: not a follow-up)."""
    if not spec.expectations:
        return {}
    for start, end in reversed(quoted_spans(text)):  # quoted text is not said to us
        text = text[:start] + " " + text[end:]
    if any(word in NEGATIONS for word in _plain(text).split()):
        return {}  # "don't make it friday" changes nothing
    stripped = text.strip().rstrip(".!")
    found: dict[str, Any] = {}
    for expectation in spec.expectations:
        if expectation.pattern is not None:
            match = re.search(expectation.pattern, stripped, re.IGNORECASE)
            if match and match.group(expectation.slot):
                found[expectation.slot] = match.group(expectation.slot).strip()
    if found:
        return found
    change = _CHANGE.match(stripped) or _INSTEAD.match(stripped)
    slots = [spec.slots[e.slot] for e in spec.expectations]
    if change is not None:
        return {_slot_for(spec, slots, change.group("value"), today): change.group("value")}
    if len(stripped.split()) > _MAX_WORDS:
        return {}
    for slot in slots:
        value = _by_type(slot, stripped, today)
        if value is not None:
            found[slot.name] = value
    return found


def _slot_for(spec: IntentSpec, slots: list[SlotSpec], value: str, today: dt.date) -> str:
    """The expectation slot a change phrase's value is for: the only one, else the first that
    accepts it, else the first."""
    for slot in slots:
        if not validate_slots(spec, {slot.name: value}, today=today).invalid:
            return slot.name
    return slots[0].name


def _by_type(slot: SlotSpec, text: str, today: dt.date) -> Any:
    words = _plain(text).split()
    if slot.type == "enum":
        folded = {v.casefold(): v for v in slot.values}
        hits = {folded[w] for w in words if w in folded}
        return hits.pop() if len(hits) == 1 else None
    if slot.type == "date":
        iso = _ISO.search(text)
        if iso:
            return iso.group()
        days = [w for w in words if w in (*WEEKDAYS, "today", "tomorrow")]
        return days[0] if len(days) == 1 and parse_date(days[0], today) else None
    if slot.type in ("int", "number"):
        numbers = _NUMBER.findall(text)
        return numbers[0] if len(numbers) == 1 else None
    if slot.type in ("regex", "entity") and slot.pattern is not None:
        match = re.search(rf"(?<!\w)(?:{slot.pattern})(?!\w)", text)
        return match.group() if match else None
    return None
