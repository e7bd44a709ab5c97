"""The one slot validator: rule matches, generative proposals and follow-ups all pass here (003 F08).

``validate_slots`` turns raw values (strings captured by a pattern, JSON values proposed by a
model) into typed JSON values and reports every problem instead of dropping it: a required slot
not filled is *missing*; a value of the wrong type, outside its enum, failing its format, not
finite or out of range, or a slot the intent does not declare is *invalid*. A valid value is
canonical — an enum value in its declared spelling, a date as ``YYYY-MM-DD`` — so the same
slots validate to the same result whichever path produced them.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.catalog import FrozenDict

from .spec import IntentSpec, SlotSpec

__all__ = ["SlotProblem", "SlotReport", "parse_date", "validate_slots"]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_TRUE = frozenset({"true", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "no", "n", "off", "0"})


@dataclass(frozen=True, slots=True)
class SlotProblem:
    """Why a slot's value was refused. ``value`` is what was given (not in ``to_dict``)."""

    slot: str
    reason: str
    value: Any = None

    def to_dict(self) -> dict[str, str]:
        return {"slot": self.slot, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SlotReport:
    """Validated ``slots`` (read-only), required slots ``missing``, and ``invalid`` values."""

    slots: Mapping[str, Any]
    missing: tuple[str, ...]
    invalid: tuple[SlotProblem, ...]

    @property
    def complete(self) -> bool:
        return not self.missing and not self.invalid


def parse_date(text: str, today: dt.date) -> str | None:
    """``YYYY-MM-DD``, ``today``, ``tomorrow`` or a weekday (its next occurrence, today
    excluded) as an ISO date; ``None`` when ``text`` is none of these."""
    word = text.strip().lower()
    if _ISO_DATE.match(word):
        try:
            return dt.date.fromisoformat(word).isoformat()
        except ValueError:
            return None
    if word == "today":
        return today.isoformat()
    if word == "tomorrow":
        return (today + dt.timedelta(days=1)).isoformat()
    if word in WEEKDAYS:
        ahead = (WEEKDAYS.index(word) - today.weekday() - 1) % 7 + 1
        return (today + dt.timedelta(days=ahead)).isoformat()
    return None


def validate_slots(spec: IntentSpec, raw: Mapping[str, Any], *, today: dt.date) -> SlotReport:
    """Validate ``raw`` against ``spec``'s slots; ``None`` values count as not given."""
    slots: dict[str, Any] = {}
    invalid: list[SlotProblem] = []
    for name, value in raw.items():
        if value is None:
            continue
        slot = spec.slots.get(name) if isinstance(name, str) else None
        if slot is None:
            declared = ", ".join(spec.slots) or "none"
            invalid.append(SlotProblem(str(name), f"unknown slot: intent {spec.id!r} declares "
                                       f"{declared}", value))
            continue
        typed, problem = _check(slot, value, today)
        if problem is not None:
            invalid.append(SlotProblem(name, problem, value))
        else:
            slots[name] = typed
    refused = {p.slot for p in invalid}
    missing = tuple(n for n in spec.required if n not in slots and n not in refused)
    return SlotReport(FrozenDict(slots), missing, tuple(invalid))


def _check(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    return _CHECKS[slot.type](slot, value, today)


def _string(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    if not isinstance(value, str):
        return None, f"expected text, got {_kind(value)}"
    text = value.strip()
    if not text:
        return None, "is empty"
    if slot.pattern is not None and not re.fullmatch(slot.pattern, text):
        return None, f"bad format: {text!r} does not match {slot.pattern!r}"
    return text, None


def _enum(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    if isinstance(value, str):
        folded = value.strip().casefold()
        for allowed in slot.values:
            if allowed.casefold() == folded:
                return allowed, None
    return None, f"{_shown(value)} is not one of {', '.join(slot.values)}"


def _int(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    if isinstance(value, str) and _INT.match(value.strip()):
        value = int(value.strip())
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"expected a whole number, got {_shown(value)}"
    return value, _range(slot, value)


def _number(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, f"expected a number, got {_shown(value)}"
    if not math.isfinite(value):
        return None, f"{value!r} is not a finite number"
    return value, _range(slot, value)


def _bool(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE, None
    return None, f"expected yes or no, got {_shown(value)}"


def _date(slot: SlotSpec, value: Any, today: dt.date) -> tuple[Any, str | None]:
    parsed = parse_date(value, today) if isinstance(value, str) else None
    if parsed is None:
        return None, (f"bad format: {_shown(value)} is not a date (YYYY-MM-DD, today, "
                      "tomorrow or a weekday)")
    return parsed, None


def _range(slot: SlotSpec, value: float) -> str | None:
    if slot.minimum is not None and value < slot.minimum:
        return f"{value} is below the minimum {slot.minimum}"
    if slot.maximum is not None and value > slot.maximum:
        return f"{value} is above the maximum {slot.maximum}"
    return None


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_CHECKS: dict[str, Callable[[SlotSpec, Any, dt.date], tuple[Any, str | None]]] = {
    "string": _string, "regex": _string, "entity": _string, "enum": _enum, "int": _int,
    "number": _number, "bool": _bool, "date": _date,
}
