"""A configuration's tool entries as runtime values, at build time: an agent's ``tools`` and a
workflow's capability nodes resolved to built-in names, ``module:attr`` SDK tools (imported
now), the listed MCP tools an ``mcp.<server>.<tool>`` entry selects, the remote agent of an
``a2a.<name>`` entry and the ``(spec, handler)`` of a ``command.<id>`` entry.

Owns: resolving tool entries. Does not own: listing the MCP servers, remote agents and
command tools they resolve against (``assembly.mcp``, ``assembly.a2a``,
``assembly.commands``); enumerating the entries (``assembly.entries``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentloom.agent.spec import AgentTool
from agentloom.assembly.imports import import_ref
from agentloom.assembly.mcp import mcp_entry_tools
from agentloom.catalog import CapabilitySpec
from agentloom.config import Config, key_path
from agentloom.config.a2a import a2a_entry_agent
from agentloom.config.commands import command_entry
from agentloom.config.mcp import mcp_entry_parts
from agentloom.config.workflows import CapabilityNodeConfig
from agentloom.errors import ConfigError
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.squad.workflow_tools import is_workflow_tool, workflow_tool
from agentloom.tools.sdk import Tool

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpTool

__all__ = ["agent_tools", "entry_tools", "sdk_tools", "workflow_tools"]


def sdk_tools(config: Config, agent_name: str) -> list[Tool[Any]]:
    """The agent's ``module:attr`` tools, imported now, in the order listed.

    Raises:
        ConfigError: no such agent, or an entry does not import or is not an ``agentloom.Tool``
            instance; the message names ``agents.<agent>.tools[<i>]``.
    """
    return [t for t in agent_tools(config, agent_name) if isinstance(t, Tool)]


def workflow_tools(config: Config, workflow: str,
                   mcp: Sequence[McpTool] | None = None, a2a: Mapping[str, A2aAgent] | None = None,
                   commands: Mapping[str, tuple[CapabilitySpec, CapabilityHandler]] | None = None,
                   ) -> dict[str, AgentTool]:
    """What each capability node of ``workflows.<workflow>`` calls, by its ``capability``
    entry, resolved as an agent's ``tools`` are (``agent_tools``): a ``module:attr`` entry
    names the tool it imports, whose capability key is the tool's own name.

    Raises:
        ConfigError: as ``agent_tools``; an entry that names no single tool (a glob) names
            its key.
    """
    nodes = config.workflows[workflow].nodes
    at = {node.capability: f"{key_path(('workflows', workflow, 'nodes', name))}.capability"
          for name, node in reversed(nodes.items()) if isinstance(node, CapabilityNodeConfig)}
    out: dict[str, AgentTool] = {}
    for entry, where in reversed(at.items()):
        tools = entry_tools(config, [entry], functools.partial(_same, where), mcp, a2a, commands)
        if len(tools) != 1:
            raise ConfigError(f"{where}: {entry!r} names {len(tools)} tools; a capability node "
                              "calls exactly one (no globs)", code="CONFIG_INVALID")
        out[entry] = tools[0]
    return out


def _same(where: str, index: int) -> str:
    return where


def agent_tools(config: Config, agent_name: str,
                mcp: Sequence[McpTool] | None = None, a2a: Mapping[str, A2aAgent] | None = None,
                commands: Mapping[str, tuple[CapabilitySpec, CapabilityHandler]] | None = None,
                ) -> list[AgentTool]:
    """The agent's tools in the order listed: built-in names as strings, SDK tools imported,
    the MCP tools of ``mcp`` (``assembly.mcp.mcp_catalog``) its ``mcp.<server>.<tool>`` entries
    select (left out when ``mcp`` is ``None``), the remote agents of ``a2a``
    (``assembly.a2a.a2a_catalog``) its ``a2a.<name>`` entries name (left out when ``a2a`` is
    ``None``), the ``(spec, handler)`` of its ``command.<id>`` entries from ``commands``
    (``assembly.commands.command_tools``; left out when ``None``) — the form ``Kernel.publish``
    takes.

    Raises:
        ConfigError: as for ``sdk_tools``; ``MCP_TOOL_NOT_LISTED`` for an MCP entry naming a
            tool its server does not list.
    """
    return entry_tools(config, list(config.agent(agent_name).tools),
                       lambda i: f"{key_path(('agents', agent_name))}.tools[{i}]",
                       mcp, a2a, commands)


def entry_tools(config: Config, entries: Sequence[str], where: Callable[[int], str],
                mcp: Sequence[McpTool] | None = None, a2a: Mapping[str, A2aAgent] | None = None,
                commands: Mapping[str, tuple[CapabilitySpec, CapabilityHandler]] | None = None,
                ) -> list[AgentTool]:
    """``entries`` (tool entries; ``where(i)`` names the key of the ``i``-th in messages)
    resolved: see ``agent_tools``."""
    out: list[AgentTool] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if mcp_entry_parts(entry) is not None:
            chosen = mcp_entry_tools(entry, mcp, where(i)) if mcp is not None else []
            out.extend(t for t in chosen if t.capability_key not in seen)
            seen.update(t.capability_key for t in chosen)
            continue
        if (remote := a2a_entry_agent(entry)) is not None:  # ``assembly.a2a.a2a_catalog``
            if a2a is not None:
                out.append(a2a[remote])
            continue
        if (command := command_entry(entry)) is not None:  # ``assembly.commands``
            if commands is not None:
                out.append(commands[command])
            continue
        if is_workflow_tool(entry):  # a workflow node's tool (``squad.workflow_tools``)
            out.append(workflow_tool(entry))
            continue
        if ":" not in entry:
            out.append(entry)
            continue
        at = where(i)
        target = import_ref(entry, at, config.base_dir)
        if isinstance(target, type) and issubclass(target, Tool):
            raise ConfigError(f"{at}: {entry!r} is the class {target.__name__}; name an instance "
                              f"(e.g. `tool = {target.__name__}()` in the module)", code="CONFIG_IMPORT")
        if not isinstance(target, Tool):
            raise ConfigError(f"{at}: {entry!r} is a {type(target).__name__}, not an agentloom.Tool "
                              "instance", code="CONFIG_IMPORT")
        out.append(target)
    return out
