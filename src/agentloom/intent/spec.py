"""Intent specs: frozen values, built from Python or from the ``intents:`` config.

Every field is immutable (tuples, ``FrozenDict``), so a spec handed to the registry or read back
from it cannot be changed by its caller (003 F07). Building one checks what the config model
checks (patterns compile, named groups and expectations name declared slots), so a spec written
in Python is held to the same rules as one written in YAML.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from agentloom.catalog import FrozenDict
from agentloom.config.intents import SLOT_TYPES, IntentConfig, SlotConfig, SlotType
from agentloom.errors import ConfigError

__all__ = ["ExpectationSpec", "GuardSpec", "IntentSpec", "RuleSpec", "SlotSpec"]

_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,99}$")


def _compiles(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: not a valid regular expression ({exc}): {pattern!r}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotSpec:
    """One slot of an intent; see ``config.intents.SlotConfig`` for the meaning of each field."""

    name: str
    type: SlotType = "string"
    required: bool = False
    values: tuple[str, ...] = ()
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    entity: str | None = None
    question: str | None = None

    def __post_init__(self) -> None:
        if self.type not in SLOT_TYPES:
            raise ConfigError(f"slot {self.name!r}: unknown type {self.type!r}; use one of "
                              f"{', '.join(SLOT_TYPES)}")
        object.__setattr__(self, "values", tuple(self.values))
        try:  # the config model's own checks, one rule set for YAML and Python
            SlotConfig(type=self.type, required=self.required, values=self.values or None,
                       pattern=self.pattern, minimum=self.minimum, maximum=self.maximum,
                       entity=self.entity, question=self.question)
        except ValueError as exc:
            raise ConfigError(f"slot {self.name!r}: {exc}") from None

    @classmethod
    def from_config(cls, name: str, config: SlotConfig) -> SlotSpec:
        return cls(name=name, type=config.type, required=config.required,
                   values=config.values or (), pattern=config.pattern, minimum=config.minimum,
                   maximum=config.maximum, entity=config.entity, question=config.question)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSpec:
    """A ``pattern`` or ``keywords`` rule, with its ``unless`` words and ``negation`` switch."""

    pattern: str | None = None
    keywords: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    negation: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "keywords", tuple(k.lower() for k in self.keywords))
        object.__setattr__(self, "unless", tuple(u.lower() for u in self.unless))
        if (self.pattern is None) == (not self.keywords):
            raise ConfigError("a rule needs exactly one of `pattern` or `keywords`")
        if self.pattern is not None:
            _compiles(self.pattern, "rule")


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardSpec:
    """The intent is never recognised in a message matching ``forbid``."""

    forbid: str
    reason: str | None = None

    def __post_init__(self) -> None:
        _compiles(self.forbid, "guard")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectationSpec:
    """A slot a follow-up message may fill or change, read by ``pattern`` or by its type."""

    slot: str
    pattern: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IntentSpec:
    """One intent: what a message may be recognised as, and the command (``action``) it maps to.

    Raises:
        ConfigError: at construction, for a bad id, a pattern that does not compile, a named
            group or an expectation naming an undeclared slot.
    """

    id: str
    action: str
    description: str = ""
    examples: tuple[str, ...] = ()
    rules: tuple[RuleSpec, ...] = ()
    guards: tuple[GuardSpec, ...] = ()
    expectations: tuple[ExpectationSpec, ...] = ()
    slots: Mapping[str, SlotSpec] = field(default_factory=lambda: FrozenDict())
    aliases: tuple[str, ...] = ()
    confirmation: Literal["auto", "always"] = "auto"
    required: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The required slots, in declaration order (derived)."""
    dated: bool = field(init=False, repr=False, compare=False)
    """Whether a slot is a ``date`` (validating it needs today's date; derived)."""

    def __post_init__(self) -> None:
        for name in ("examples", "rules", "guards", "expectations", "aliases"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        slots = FrozenDict({name: _slot(name, spec) for name, spec in dict(self.slots).items()})
        object.__setattr__(self, "slots", slots)
        object.__setattr__(self, "required", tuple(n for n, s in slots.items() if s.required))
        object.__setattr__(self, "dated", any(s.type == "date" for s in slots.values()))
        where = f"intent {self.id!r}"
        if not _ID.match(self.id):
            raise ConfigError(f"{where}: the id must be letters, digits, ., _ or - (got {self.id!r})")
        if not _ID.match(self.action):
            raise ConfigError(f"{where}: action {self.action!r} must be a command id")
        if self.confirmation not in ("auto", "always"):
            raise ConfigError(f"{where}: confirmation must be auto or always")
        for i, rule in enumerate(self.rules):
            if rule.pattern is not None:
                extra = sorted(set(re.compile(rule.pattern).groupindex) - set(slots))
                if extra:
                    raise ConfigError(f"{where}: rules[{i}] group(s) {', '.join(extra)} fill no "
                                      "declared slot")
        for i, expectation in enumerate(self.expectations):
            if expectation.slot not in slots:
                raise ConfigError(f"{where}: expectations[{i}] names undeclared slot "
                                  f"{expectation.slot!r}")
            if expectation.pattern is not None and expectation.slot not in _compiles(
                    expectation.pattern, f"{where}: expectations[{i}]").groupindex:
                raise ConfigError(f"{where}: expectations[{i}] pattern needs a group "
                                  f"(?P<{expectation.slot}>…)")

    @classmethod
    def from_config(cls, intent_id: str, config: IntentConfig) -> IntentSpec:
        """The spec an ``intents:`` entry describes."""
        return cls(
            id=intent_id, action=config.action, description=config.description,
            examples=config.examples,
            rules=tuple(RuleSpec(pattern=r.pattern, keywords=r.keywords, unless=r.unless,
                                 negation=r.negation) for r in config.rules),
            guards=tuple(GuardSpec(forbid=g.forbid, reason=g.reason) for g in config.guards),
            expectations=tuple(ExpectationSpec(slot=e.slot, pattern=e.pattern)
                               for e in config.expectations),
            slots={name: SlotSpec.from_config(name, slot) for name, slot in config.slots.items()},
            aliases=config.aliases, confirmation=config.confirmation)


def _slot(name: str, spec: SlotSpec | SlotConfig) -> SlotSpec:
    if isinstance(spec, SlotConfig):
        return SlotSpec.from_config(name, spec)
    if spec.name != name:
        raise ConfigError(f"slot {name!r} is declared with name {spec.name!r}")
    return spec
