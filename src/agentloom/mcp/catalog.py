"""An MCP server's tools as catalog entries: ``tools/list`` (every page) → ``McpTool`` → spec.

::

    list_tools(connection)  ── every page, cursor by cursor ──► [McpTool(server, tool), …]
    select(tools, "mcp.git.*") ── fnmatch on the capability key ──► the agent's tools
    McpTool.spec(release_id)  ──► CapabilitySpec(kind="mcp", capability_key="mcp.git.git_status",
                                                  exposed_name="mcp__git__git_status", …)

The input schema is the server's, as declared (``schema_origin="mcp"``: compiled by the same
catalog code as every tool at publication, local ``$ref`` bundled, never closed; a draft-07
schema, what servers on the TypeScript SDK send, is first rewritten as 2020-12 where the two
differ: ``as_2020_12``); the output schema is kept and ``structuredContent`` is validated
against it on every call. Annotations (``readOnlyHint``, ``idempotentHint``, …) are kept for
display only: they never grant permission and never decide a retry.

Exposed names: ``mcp__<server>__<tool>``; a character outside ``[A-Za-z0-9_-]`` becomes ``_``
and a name over 64 characters is cut with a hash suffix (``catalog.legal_exposed_name``). Two
tools that end up with one name are refused at publication (``DUPLICATE_EXPOSED_NAME``).

Owns: listing, selecting, describing MCP tools. Does not own: calling them (``handler``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.catalog import DIALECT_2020_12, CapabilitySpec, legal_exposed_name
from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.mcp.connection import McpConnection
from agentloom.mcp.watch import bounded
from agentloom.tools.sdk import ToolDescription
from mcp import types as mt

if TYPE_CHECKING:
    from agentloom.mcp.pool import McpSessions
    from agentloom.pipeline.ports import CapabilityHandler

__all__ = ["MAX_PAGES", "McpTool", "as_2020_12", "capability_key", "exposed_name", "list_tools",
           "select"]

MAX_PAGES = 1000
"""A server that keeps returning a cursor is stopped after this many pages."""


def capability_key(server: str, tool: str) -> str:
    """``mcp.<server>.<tool>``: the tool's capability key (what ``tools`` and hooks match)."""
    return f"mcp.{server}.{tool}"


def exposed_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, made legal for a model (see the module docstring)."""
    return legal_exposed_name(f"mcp__{server}__{tool}")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpTool:
    """One tool a server listed: what an agent's ``tools`` holds for it, and its catalog entry.

    ``config`` is the server's entry, so the run's session can be opened from it when the tool
    is first called."""

    server: str
    config: StdioServerConfig | HttpServerConfig = field(repr=False)
    base_dir: Path = field(repr=False)
    """The config file's folder (relative ``mounts`` are read from it)."""
    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    title: str | None = None

    @property
    def capability_key(self) -> str:
        return capability_key(self.server, self.name)

    @property
    def handler_ref(self) -> str:
        return f"mcp:{self.server}/{self.name}"

    def spec(self, release_id: str) -> CapabilitySpec:
        """The catalog entry of this tool in release ``release_id``."""
        return CapabilitySpec(
            resource_version_id=release_id,
            capability_key=self.capability_key,
            kind="mcp",
            exposed_name=exposed_name(self.server, self.name),
            description=self.description or self.title or self.name,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            handler_ref=self.handler_ref,
            schema_origin="mcp",
        )

    def handler(self, sessions: McpSessions) -> CapabilityHandler:
        """The pipeline handler of this capability: ``tools/call`` on the run's session
        (``resources.McpResources`` reads a resource instead)."""
        from agentloom.mcp.handler import McpToolHandler

        return McpToolHandler(self, sessions)

    def describe(self) -> ToolDescription:
        """Name (the capability key), description and input schema, as an SDK tool describes
        itself: what ``AgentSpec.tool_keys`` and the release digest read."""
        return ToolDescription(name=self.capability_key, description=self.description,
                               input_schema=dict(self.input_schema))

    def to_dict(self) -> dict[str, Any]:
        """For ``agentloom mcp list --json``: names, schemas and the display-only annotations."""
        return {"server": self.server, "name": self.name, "capability_key": self.capability_key,
                "exposed_name": exposed_name(self.server, self.name), "title": self.title,
                "description": self.description, "input_schema": dict(self.input_schema),
                "output_schema": dict(self.output_schema) if self.output_schema else None,
                "annotations": dict(self.annotations)}


_DRAFTS = frozenset({"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
                     "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-06/schema",
                     "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-04/schema"})
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMAS = ("additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
               "items", "additionalItems", "unevaluatedProperties", "unevaluatedItems")


def as_2020_12(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A schema declaring draft-04/06/07 (what servers on the TypeScript SDK send) rewritten
    as JSON Schema 2020-12 where the two differ: ``$schema``, tuple ``items`` →
    ``prefixItems`` (``additionalItems`` → ``items``), ``dependencies`` →
    ``dependentRequired`` / ``dependentSchemas``. Any other schema is returned unchanged (a
    2020-12 one, one without ``$schema``: 2020-12 by MCP's default)."""
    if schema.get("$schema") not in _DRAFTS:
        return dict(schema)
    out: dict[str, Any] = _rewrite(schema)
    out["$schema"] = DIALECT_2020_12
    return out


def _rewrite(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: _rewrite(v) for k, v in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_rewrite(v) for v in value]
        elif key in _SUBSCHEMAS:
            out[key] = _rewrite(value)
        else:
            out[key] = value
    items = out.get("items")
    if isinstance(items, list):  # a tuple: its entries are positions, additionalItems the rest
        out["prefixItems"] = [_rewrite(v) for v in items]
        del out["items"]
        if "additionalItems" in out:
            out["items"] = out.pop("additionalItems")
    else:
        out.pop("additionalItems", None)  # without tuple items it has no effect
    dependencies = out.pop("dependencies", None)
    if isinstance(dependencies, Mapping):
        for name, dep in dependencies.items():
            target = "dependentRequired" if isinstance(dep, list) else "dependentSchemas"
            out.setdefault(target, {})[name] = dep if isinstance(dep, list) else _rewrite(dep)
    return out


def _tool(server: str, config: StdioServerConfig | HttpServerConfig, base_dir: Path,
          tool: mt.Tool) -> McpTool:
    annotations = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) \
        if tool.annotations is not None else {}
    return McpTool(server=server, config=config, base_dir=base_dir, name=tool.name,
                   description=tool.description or "", input_schema=as_2020_12(tool.input_schema),
                   output_schema=as_2020_12(tool.output_schema) if tool.output_schema else None,
                   annotations=annotations, title=tool.title)


async def list_tools(connection: McpConnection, base_dir: Path) -> list[McpTool]:
    """Every tool ``connection``'s server lists, page after page, in its order (``base_dir``:
    the config file's folder).

    Raises:
        McpError: ``MCP_STEP_TIMEOUT``, a page took longer than the server's ``timeout_s``.
    """
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        with bounded(connection.server, connection.config, "tools/list"):
            page = await connection.session.list_tools(params=params)
        tools.extend(_tool(connection.server, connection.config, base_dir, t) for t in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def select(tools: Iterable[McpTool], patterns: Sequence[str]) -> list[McpTool]:
    """The tools whose capability key matches one of ``patterns`` (``fnmatch``, case-sensitive),
    in the order of the patterns, each tool once."""
    listed = list(tools)
    chosen: dict[str, McpTool] = {}
    for pattern in patterns:
        for tool in listed:
            if fnmatch.fnmatchcase(tool.capability_key, pattern):
                chosen.setdefault(tool.capability_key, tool)
    return list(chosen.values())
