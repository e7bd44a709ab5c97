"""What a request asks of a preset and the pieces of a provider body: the capabilities a
request needs, deep-merging body fragments, tool entries, output formats, think parameters,
and reading a usage field at a dotted path.

Owns: these pure helpers. Does not own: the order a body is assembled in, the capability
check (``_preset.Preset``) or validating fragments (``_loading``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from agentloom.errors import ConfigError
from agentloom.models.presets._sections import Protocol, ThinkMapping
from agentloom.models.types import ModelRequest, ThinkParams, ToolDef, named_schema

__all__ = ["apply_think", "capabilities_for", "first_int", "merge", "set_output_format", "tool_entry"]


def capabilities_for(request: ModelRequest) -> frozenset[str]:
    """The capabilities a request needs: ``tools``, ``json_object`` / ``json_schema``,
    ``think_toggle`` (any explicit ``think.enabled``) and ``think_effort``."""
    needed: set[str] = set()
    if request.tools:
        needed.add("tools")
    if isinstance(request.output_format, Mapping):
        needed.add("json_schema")
    elif request.output_format == "json_object":
        needed.add("json_object")
    if request.think is not None:
        if request.think.enabled is not None:
            needed.add("think_toggle")
        if request.think.effort is not None:
            needed.add("think_effort")
    return frozenset(needed)


def merge(target: dict[str, Any], fragment: Mapping[str, Any]) -> None:
    """Deep-merge a copy of ``fragment`` into ``target``; a ``None`` value deletes the key."""
    for key, value in fragment.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)


def tool_entry(protocol: Protocol, tool: ToolDef) -> dict[str, Any]:
    spec = {"name": tool.name, "description": tool.description, "parameters": _plain(tool.parameters)}
    if protocol == "responses":
        return {"type": "function", **spec}
    return {"type": "function", "function": spec}


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def set_output_format(body: dict[str, Any], protocol: Protocol, fmt: Any) -> None:
    if isinstance(fmt, Mapping):
        spec = _plain(named_schema(fmt) or {"name": "output", "schema": fmt})
        if protocol == "responses":
            body["text"] = {"format": {"type": "json_schema", **spec}}
        else:
            body["response_format"] = {"type": "json_schema", "json_schema": spec}
    elif fmt == "json_object":
        if protocol == "responses":
            body["text"] = {"format": {"type": "json_object"}}
        else:
            body["response_format"] = {"type": "json_object"}


def apply_think(body: dict[str, Any], mapping: ThinkMapping, think: ThinkParams) -> None:
    if think.enabled is False and think.effort is not None:
        raise ConfigError(
            f"think.effort={think.effort!r} contradicts think.enabled=false; set one of them",
            code="MODEL_THINK_CONFLICT",
        )
    if think.enabled is True:
        merge(body, mapping.enabled)
    elif think.enabled is False:
        merge(body, mapping.disabled)
    if think.effort is not None and mapping.effort is not None:
        value: Any = mapping.effort.values[think.effort]
        for part in reversed(mapping.effort.param.split(".")):
            value = {part: value}
        merge(body, value)


def first_int(raw: Mapping[str, Any], paths: tuple[str, ...]) -> tuple[str, int | None]:
    """The first of ``paths`` holding an integer, and that integer (``reported_usage`` judges
    whether it is a count); ``(first path, None)`` when none does."""
    for path in paths:
        node: Any = raw
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, int) and not isinstance(node, bool):
            return path, node
    return (paths[0] if paths else ""), None

