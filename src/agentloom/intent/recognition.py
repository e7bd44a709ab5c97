"""What recognition returns (``Recognition``) and the thresholds it applies (``Thresholds``).

``matched``: one intent, every required slot filled, every value valid, confident enough — the
only decision that may start its action. ``clarify``: an intent (or several ``candidates``) was
found but a slot is missing or invalid, the intent is ambiguous, or the confidence is between
the two thresholds; missing and invalid slots are kept. ``no_match``: nothing fits (an agent
run's job). ``cancelled``: the message cancelled the conversation's pending intent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentloom.catalog import FrozenDict, thaw_json

from .slots import SlotProblem

__all__ = ["Decision", "Recognition", "Source", "Thresholds"]

Decision = Literal["matched", "clarify", "no_match", "cancelled"]
Source = Literal["rule", "generative"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """Confidence thresholds for generative proposals (a rule hit has confidence 1.0).

    ``match`` (default 0.75): at or above it a complete, valid proposal is ``matched``.
    ``clarify`` (default 0.4): at or above it (and below ``match``) it is ``clarify``; below it,
    ``no_match``. A confidence that is not a number in [0, 1] is never above either.
    """

    match: float = 0.75
    clarify: float = 0.4

    def __post_init__(self) -> None:
        for name in ("match", "clarify"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"Thresholds.{name} must be a number in [0, 1], got {value!r}")
        if self.clarify > self.match:
            raise ValueError(f"Thresholds.clarify ({self.clarify}) is above match ({self.match})")


@dataclass(frozen=True, slots=True, kw_only=True)
class Recognition:
    """The outcome of recognising one message; ``slots`` is read-only."""

    decision: Decision
    intent: str | None = None
    action: str | None = None
    slots: Mapping[str, Any] = field(default_factory=lambda: FrozenDict())
    missing: tuple[str, ...] = ()
    invalid: tuple[SlotProblem, ...] = ()
    confidence: float | None = None
    source: Source | None = None
    candidates: tuple[str, ...] = ()
    reason: str | None = None
    revision: int | None = None
    confirm: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.slots, FrozenDict):
            object.__setattr__(self, "slots", FrozenDict(self.slots))
        object.__setattr__(self, "missing", tuple(self.missing))
        object.__setattr__(self, "invalid", tuple(self.invalid))
        object.__setattr__(self, "candidates", tuple(self.candidates))
        if self.decision == "matched" and (self.intent is None or self.missing or self.invalid):
            raise ValueError("a matched recognition names its intent and has every slot valid")

    def to_dict(self) -> dict[str, Any]:
        """A fresh JSON object (mutating it changes nothing here)."""
        return {
            "decision": self.decision, "intent": self.intent, "action": self.action,
            "slots": thaw_json(self.slots), "missing": list(self.missing),
            "invalid": [p.to_dict() for p in self.invalid], "confidence": self.confidence,
            "source": self.source, "candidates": list(self.candidates), "reason": self.reason,
            "revision": self.revision, "confirm": self.confirm,
        }
