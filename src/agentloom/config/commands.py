"""The ``commands:`` section: the actions a recognised intent (or a caller) may run
(docs/commands.md).

Example::

    commands:
      meeting.move:
        params: {type: object, properties: {day: {type: string}}, required: [day]}
        risk: write                         # read | write | dangerous
        handler: {kind: python, ref: "my_commands:move"}

Owns: the shape of one command entry, the checks that need only that entry (``params`` is a
JSON Schema 2020-12 object schema, a ``dangerous`` command is confirmed) and the cross-checks
between ``intents:`` and ``commands:`` (``command_problems``: an intent's ``action`` names a
command; its slots map to the command's params by declared names only, typed — 003 F09).
Does not own: importing the handler (``agentloom.agent.commands``), running a command
(``agentloom.command``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, field_validator, model_validator

from agentloom.catalog import compile_schema
from agentloom.config._problems import Problem, did_you_mean, key_path
from agentloom.config.intents import IntentConfig
from agentloom.errors import CatalogError

__all__ = ["COMMAND_ID", "CommandConfig", "CommandHandlerConfig", "command_entry", "command_problem",
           "command_problems", "command_tool_problems"]

COMMAND_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,99}$")
"""A command id: a letter, then letters, digits, ``_``, ``.`` or ``-`` (at most 100)."""

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

# an intent slot type -> the JSON Schema types a param filled by it may declare
_SLOT_JSON_TYPES: dict[str, frozenset[str]] = {
    "string": frozenset({"string"}), "enum": frozenset({"string"}),
    "date": frozenset({"string"}), "regex": frozenset({"string"}),
    "entity": frozenset({"string"}), "int": frozenset({"integer", "number"}),
    "number": frozenset({"number"}), "bool": frozenset({"boolean"}),
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class CommandHandlerConfig(_Strict):
    """What runs a command: ``kind: python`` and ``ref: "module:attr"`` — a function
    ``(params, ctx)`` (sync or async) looked up on ``sys.path`` and in the config's folder."""

    kind: Literal["python"] = "python"
    ref: str = Field(min_length=3)

    @field_validator("ref")
    @classmethod
    def _ref(cls, value: str) -> str:
        if not _REF.match(value):
            raise ValueError(f"must be 'module:attribute' (got {value!r})")
        return value


class CommandConfig(_Strict):
    """One command under ``commands:``.

    ``params`` (default: an object with no properties) is the JSON Schema 2020-12 object its
    parameters must satisfy (objects are closed unless they say otherwise); ``risk`` (default
    ``write``) is ``read``, ``write`` or ``dangerous``; ``confirm`` (default: true exactly for
    ``dangerous``) asks for a one-time confirmation token before it runs — a ``dangerous``
    command cannot turn it off; ``confirmation_ttl_s`` (default 300) is how long a token lives;
    ``expose_as_tool`` (default false) lets an agent list it in ``tools`` as
    ``command.<id>``."""

    description: str = ""
    params: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}})
    risk: Literal["read", "write", "dangerous"] = "write"
    confirm: StrictBool | None = None
    confirmation_ttl_s: StrictFloat = Field(default=300.0, gt=0)
    expose_as_tool: StrictBool = False
    handler: CommandHandlerConfig

    @field_validator("params")
    @classmethod
    def _params(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") != "object":
            raise ValueError("must be an object schema (type: object, properties: {...})")
        try:
            compile_schema(value, origin="config")
        except CatalogError as exc:
            raise ValueError(f"is not a valid JSON Schema 2020-12: {exc}") from None
        return value

    @model_validator(mode="after")
    def _confirmed(self) -> CommandConfig:
        if self.risk == "dangerous" and self.confirm is False:
            raise ValueError("a dangerous command is always confirmed; remove `confirm: false` "
                             "or lower its risk")
        return self

    @property
    def needs_confirmation(self) -> bool:
        return self.risk == "dangerous" if self.confirm is None else self.confirm


def command_problems(intents: Mapping[str, IntentConfig],
                     commands: Mapping[str, CommandConfig]) -> list[Problem]:
    """Every problem between ``intents:`` and ``commands:`` (003 F09), in file order: a bad
    command id, an ``action`` naming no command, a slot that is no declared param of it or
    whose type the param does not accept, a required param no slot fills."""
    problems: list[Problem] = []
    for name in commands:
        if not COMMAND_ID.match(name):
            problems.append(Problem(key_path(("commands", name)),
                                    "a command id starts with a letter and holds only letters, "
                                    "digits, '_', '.' or '-' (at most 100 characters); rename it"))
    for name, intent in intents.items():
        at = key_path(("intents", name))
        command = commands.get(intent.action)
        if command is None:
            known = list(commands)
            problems.append(Problem(f"{at}.action", f"no command named {intent.action!r}; "
                                    f"{did_you_mean(intent.action, known)}defined: "
                                    f"{', '.join(known) or 'none (add it under commands)'}"))
            continue
        properties = command.params.get("properties") or {}
        for slot, slot_config in intent.slots.items():
            param = properties.get(slot)
            if param is None:
                problems.append(Problem(f"{at}.slots.{slot}", f"command {intent.action!r} declares "
                                        f"no param {slot!r} (params: "
                                        f"{', '.join(properties) or 'none'}); slots map to params "
                                        "by name only: rename the slot or declare the param"))
                continue
            declared = _json_types(param)
            accepted = _SLOT_JSON_TYPES[slot_config.type]
            if declared and not declared & accepted:
                problems.append(Problem(f"{at}.slots.{slot}", f"a {slot_config.type} slot cannot "
                                        f"fill param {slot!r} of {intent.action!r}, which is "
                                        f"{'/'.join(sorted(declared))}; make the types agree"))
        for required in command.params.get("required") or ():
            if required not in intent.slots:
                problems.append(Problem(f"{at}.slots", f"command {intent.action!r} requires param "
                                        f"{required!r} and no slot of this intent fills it; add "
                                        f"a slot {required!r}"))
    return problems


def _json_types(param: Any) -> frozenset[str]:
    if not isinstance(param, Mapping):
        return frozenset()
    declared = param.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(t for t in declared if isinstance(t, str))
    return frozenset()


_TOOL_PREFIX = "command."


def command_entry(entry: str) -> str | None:
    """The command id of an agent's ``tools`` entry ``command.<id>``, else None."""
    if entry.startswith(_TOOL_PREFIX) and COMMAND_ID.match(entry[len(_TOOL_PREFIX):]):
        return entry[len(_TOOL_PREFIX):]
    return None


def command_tool_problems(agents: Mapping[str, Any],
                          commands: Mapping[str, CommandConfig]) -> list[Problem]:
    """An agent's ``command.<id>`` tool must name a command with ``expose_as_tool: true``."""
    return [Problem(f"{key_path(('agents', name))}.tools[{i}]", problem)
            for name, agent in agents.items() for i, entry in enumerate(agent.tools)
            if (problem := command_problem(commands, entry)) is not None]


def command_problem(commands: Mapping[str, Any], entry: str) -> str | None:
    """What is wrong with the tool entry ``entry`` as a ``command.<id>``: a command
    ``commands`` lacks, or one not exposed as a tool (None: nothing, or not a command)."""
    command = command_entry(entry)
    if command is None:
        return None
    found = commands.get(command)
    if found is None:
        known = list(commands)
        return (f"no command named {command!r}; {did_you_mean(command, known)}defined: "
                f"{', '.join(known) or 'none (add it under commands)'}")
    if not found.expose_as_tool:
        return (f"command {command!r} is not exposed as a tool; "
                f"set commands.{command}.expose_as_tool: true")
    return None
