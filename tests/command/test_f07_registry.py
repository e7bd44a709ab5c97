"""003 F07 (the Command part): registering or reading a command spec never shares a mutable
object with the caller — tests mutate every object they hand in or get back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentloom.command import CommandHandlerRef, CommandRegistry, CommandSpec
from agentloom.errors import CatalogError, RegistrationError

PARAMS: dict[str, Any] = {"type": "object", "properties": {"day": {"type": "string", "enum": ["mon", "fri"]}},
          "required": ["day"]}


def test_f07_mutating_the_registered_params_changes_nothing() -> None:
    params: dict[str, Any] = copy.deepcopy(PARAMS)
    spec = CommandSpec(id="meeting.move", params=params, handler=CommandHandlerRef(ref="m:f"),
                       expose_as_tool=True)
    registry = CommandRegistry()
    registry.register(spec)
    params["properties"]["day"]["enum"].append("sun")
    params["required"].clear()
    assert registry.errors("meeting.move", {"day": "sun"}) != []
    assert registry.errors("meeting.move", {}) != []
    assert registry.get("meeting.move").params == PARAMS


def test_f07_every_returned_spec_is_a_copy_that_cannot_reach_the_registry() -> None:
    registry = CommandRegistry({"m": CommandSpec(id="m", params=PARAMS,
                                                 handler=CommandHandlerRef(ref="m:f"))})
    got = registry.get("m")
    listed = registry.specs()[0]
    for spec in (got, listed):
        with pytest.raises(TypeError):
            spec.params["properties"]["day"]["enum"].append("sun")
        with pytest.raises(TypeError):
            spec.params["required"] = []  # type: ignore[index]
        thawed = spec.to_dict()
        thawed["params"]["properties"]["day"]["enum"].append("sun")
        thawed["expose_as_tool"] = True
    assert got is not listed and got.params is not listed.params
    assert registry.get("m").params == PARAMS
    assert registry.get("m").expose_as_tool is False
    assert registry.errors("m", {"day": "sun"}) != []


def test_f07_a_registered_id_is_refused_and_a_dangerous_command_is_always_confirmed() -> None:
    registry = CommandRegistry()
    registry.register(CommandSpec(id="x", handler=CommandHandlerRef(ref="m:f")))
    with pytest.raises(RegistrationError):
        registry.register(CommandSpec(id="x", handler=CommandHandlerRef(ref="m:g")))
    with pytest.raises(CatalogError):
        CommandSpec(id="y", risk="dangerous", confirm=False, handler=CommandHandlerRef(ref="m:f"))
    assert CommandSpec(id="z", risk="dangerous", handler=CommandHandlerRef(ref="m:f")).needs_confirmation
    assert not CommandSpec(id="w", risk="read", handler=CommandHandlerRef(ref="m:f")).needs_confirmation
