"""The ``intents:`` section: what a user's message may be recognised as (docs/intent.md).

Example::

    intents:
      move_meeting:
        description: Move a meeting to another day
        examples: ["move the meeting to friday"]
        rules: [{pattern: "move (the )?meeting( to (?P<day>\\w+))?"}]   # named groups fill slots
        slots: {day: {type: enum, values: [monday, tuesday, wednesday, thursday, friday],
                      required: true}}
        expectations: [day]          # a follow-up ("make it friday") may fill / change `day`
        action: meeting.move

Owns: the shape of one intent entry and the checks that need only that entry (patterns
compile, a rule's named groups and an expectation name declared slots, an enum has values, a
``regex`` slot has a pattern). Does not own: whether ``action`` names a command (the
``commands:`` cross-check), recognition (``agentloom.intent``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from agentloom.config._problems import Problem, key_path

__all__ = [
    "SLOT_TYPES",
    "ExpectationConfig",
    "GuardConfig",
    "IntentConfig",
    "RuleConfig",
    "SlotConfig",
    "SlotType",
    "intent_problems",
]

SlotType = Literal["string", "int", "number", "bool", "date", "enum", "regex", "entity"]
SLOT_TYPES: tuple[str, ...] = ("string", "int", "number", "bool", "date", "enum", "regex",
                               "entity")
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,99}$")
_SLOT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"is not a valid regular expression ({exc}): {value!r}") from None
    return value


def _words(value: Any) -> Any:
    return (value,) if isinstance(value, str) else value


Words = Annotated[tuple[Annotated[str, Field(min_length=1)], ...], BeforeValidator(_words)]


class SlotConfig(_Strict):
    """One slot: its ``type`` (default ``string``), ``required`` (default false), ``values``
    (``enum``), ``pattern`` (``regex``: the whole value must match; also allowed on
    ``string`` and ``entity``), ``minimum`` / ``maximum`` (``int`` / ``number``), ``entity``
    (``entity``: the kind of thing the value names, e.g. ``order``) and ``question`` (what to
    ask when it is missing)."""

    type: SlotType = "string"
    required: StrictBool = False
    values: tuple[Annotated[str, Field(min_length=1)], ...] | None = None
    pattern: str | None = None
    minimum: StrictInt | StrictFloat | None = None
    maximum: StrictInt | StrictFloat | None = None
    entity: str | None = Field(default=None, min_length=1)
    question: str | None = Field(default=None, min_length=1)

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        return None if value is None else _regex(value)

    @model_validator(mode="after")
    def _consistent(self) -> SlotConfig:
        if self.type == "enum" and not self.values:
            raise ValueError("an enum slot needs `values` (the allowed words)")
        if self.type != "enum" and self.values is not None:
            raise ValueError(f"`values` is for enum slots; this slot is {self.type}")
        if self.type == "regex" and self.pattern is None:
            raise ValueError("a regex slot needs `pattern` (the whole value must match it)")
        if self.pattern is not None and self.type not in ("regex", "string", "entity"):
            raise ValueError(f"`pattern` is for regex, string and entity slots; this slot is "
                             f"{self.type}")
        if self.type == "entity" and self.entity is None:
            raise ValueError("an entity slot needs `entity` (the kind it refers to, e.g. order)")
        if (self.minimum is not None or self.maximum is not None) \
                and self.type not in ("int", "number"):
            raise ValueError(f"`minimum` / `maximum` are for int and number slots; this slot "
                             f"is {self.type}")
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError("`minimum` is above `maximum`")
        return self


class RuleConfig(_Strict):
    """One recognition rule: a ``pattern`` (a regular expression searched case-insensitively;
    its named groups fill the slots of the same name) or ``keywords`` (every one must appear
    as a word), not both. It does not fire when a word of ``unless`` appears, nor (with
    ``negation``, default true) when a negation — not, don't, never, … — stands just before
    it, nor when it starts inside quotes."""

    pattern: str | None = Field(default=None, min_length=1)
    keywords: Words = ()
    unless: Words = ()
    negation: StrictBool = True

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        return None if value is None else _regex(value)

    @model_validator(mode="after")
    def _one_form(self) -> RuleConfig:
        if (self.pattern is None) == (not self.keywords):
            raise ValueError("give exactly one of `pattern` (a regular expression) or "
                             "`keywords` (words that must all appear)")
        return self


class GuardConfig(_Strict):
    """A guard: the intent is never recognised — by a rule or by the generative fallback —
    in a message that matches ``forbid`` (a regular expression, case-insensitive).
    ``reason`` is reported."""

    forbid: str = Field(min_length=1)
    reason: str | None = Field(default=None, min_length=1)

    @field_validator("forbid")
    @classmethod
    def _pattern(cls, value: str) -> str:
        return _regex(value)


class ExpectationConfig(_Strict):
    """What a follow-up message may fill or change while this intent is pending: ``slot``,
    read by ``pattern`` (a regular expression with a group named after the slot) or, without
    one, by the slot's type (an enum value, a date, a number, …). A bare slot name is
    shorthand for ``{slot: NAME}``."""

    slot: str = Field(min_length=1)
    pattern: str | None = Field(default=None, min_length=1)

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        return None if value is None else _regex(value)


def _expectation(value: Any) -> Any:
    return {"slot": value} if isinstance(value, str) else value


class IntentConfig(_Strict):
    """One intent under ``intents:``. ``action`` is the command id it maps to; ``aliases``
    are other names the generative fallback may use for it; ``confirmation`` (default
    ``auto``: the command's risk decides) may be ``always``."""

    description: str = ""
    examples: tuple[str, ...] = ()
    rules: tuple[RuleConfig, ...] = ()
    guards: tuple[GuardConfig, ...] = ()
    expectations: tuple[Annotated[ExpectationConfig, BeforeValidator(_expectation)], ...] = ()
    slots: dict[str, SlotConfig] = Field(default_factory=dict)
    aliases: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    confirmation: Literal["auto", "always"] = "auto"
    action: str = Field(min_length=1)

    @field_validator("slots")
    @classmethod
    def _slot_names(cls, slots: dict[str, SlotConfig]) -> dict[str, SlotConfig]:
        for name in slots:
            if not _SLOT.match(name):
                raise ValueError(f"slot name {name!r} must be letters, digits and _ (a Python "
                                 "identifier), so a rule's named group can fill it")
        return slots

    @model_validator(mode="after")
    def _declared_slots(self) -> IntentConfig:
        declared = set(self.slots)
        for i, rule in enumerate(self.rules):
            if rule.pattern is not None:
                extra = sorted(set(re.compile(rule.pattern).groupindex) - declared)
                if extra:
                    raise ValueError(f"rules[{i}]: named group(s) {', '.join(extra)} fill no "
                                     "declared slot; declare them under `slots` or rename the "
                                     "group")
        for i, expectation in enumerate(self.expectations):
            if expectation.slot not in declared:
                raise ValueError(f"expectations[{i}]: slot {expectation.slot!r} is not declared "
                                 "under `slots`")
            if expectation.pattern is not None \
                    and expectation.slot not in re.compile(expectation.pattern).groupindex:
                raise ValueError(f"expectations[{i}]: the pattern needs a group named "
                                 f"(?P<{expectation.slot}>…)")
        if not _ID.match(self.action):
            raise ValueError(f"action {self.action!r} must be a command id (letters, digits, "
                             "., _, -)")
        return self


def intent_problems(intents: dict[str, IntentConfig]) -> list[Problem]:
    """The intent ids (keys of ``intents:``) that are not ids."""
    return [Problem(key_path(("intents", name)), "an intent id must start with a letter and hold "
                    "only letters, digits, '_', '.' or '-' (at most 100 characters); rename it")
            for name in intents if not _ID.match(name)]
